# The job's description: model layout and initial parameters, training options and their flags.
# Pure (no BLAS, no gRPC): the controller and the shards link this, never the trainer.
add_library(ringside_model
  model_spec.cc
  training_flags.cc
)
add_library(ringside::model ALIAS ringside_model)
target_link_libraries(ringside_model PUBLIC
  ringside::common absl::flags absl::status absl::statusor absl::strings absl::span)
ringside_warnings(ringside_model)
