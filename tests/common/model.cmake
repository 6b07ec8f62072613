ringside_test(model_test
  SOURCES model_spec_test.cc
  LIBS ringside::model
  LABELS unit)
