#include "server/controller/job_spec.h"

#include <cstdio>
#include <cstdlib>
#include <variant>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/net.h"
#include "common/status_macros.h"

namespace ringside::server {

namespace {

using google::protobuf::FieldDescriptor;

// Whether a JobSpec field of `type` carries a setting whose values are like `like`.
bool FieldCarries(FieldDescriptor::CppType type, const TrainingOptionValue& like) {
  switch (type) {
    case FieldDescriptor::CPPTYPE_STRING:
      return std::holds_alternative<std::string>(like);
    case FieldDescriptor::CPPTYPE_INT64:
      return std::holds_alternative<int64_t>(like);
    case FieldDescriptor::CPPTYPE_UINT64:
      return std::holds_alternative<uint64_t>(like);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return std::holds_alternative<float>(like);
    default:
      return false;
  }
}

void Write(const TrainingOptionValue& value, const FieldDescriptor& field, proto::JobSpec& job) {
  const google::protobuf::Reflection& reflection = *job.GetReflection();
  if (const auto* text = std::get_if<std::string>(&value)) {
    reflection.SetString(&job, &field, *text);
  } else if (const auto* signed_value = std::get_if<int64_t>(&value)) {
    reflection.SetInt64(&job, &field, *signed_value);
  } else if (const auto* unsigned_value = std::get_if<uint64_t>(&value)) {
    reflection.SetUInt64(&job, &field, *unsigned_value);
  } else {
    reflection.SetDouble(&job, &field, std::get<float>(value));  // exact: a double holds a float
  }
}

TrainingOptionValue Read(const proto::JobSpec& job, const FieldDescriptor& field) {
  const google::protobuf::Reflection& reflection = *job.GetReflection();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      return reflection.GetString(job, &field);
    case FieldDescriptor::CPPTYPE_INT64:
      return reflection.GetInt64(job, &field);
    case FieldDescriptor::CPPTYPE_UINT64:
      return reflection.GetUInt64(job, &field);
    default:  // CPPTYPE_DOUBLE: JobSpecFields() admits no other
      return static_cast<float>(reflection.GetDouble(job, &field));
  }
}

bool IsZero(const TrainingOptionValue& value) {
  return std::visit([](const auto& v) { return v == std::decay_t<decltype(v)>(); }, value);
}

// A row of the description and the JobSpec field that carries it.
struct JobSpecField {
  const TrainingOption* option;
  const FieldDescriptor* field;
};

// Every row of the job's scope with its field, in table order, looked up once. Aborts (a broken
// invariant of the build, not an input) when a row has no singular JobSpec field of its name and
// type: controller.proto and the description disagree (tests/server/controller/job_spec_test.cc
// says so first).
const std::vector<JobSpecField>& JobSpecFields() {
  static const std::vector<JobSpecField>* const fields = [] {
    auto* fields = new std::vector<JobSpecField>();
    for (const TrainingOption& option : TrainingOptionTable()) {
      if (option.scope != TrainingOptionScope::kJob) continue;
      const FieldDescriptor* field = proto::JobSpec::descriptor()->FindFieldByName(option.name);
      if (field == nullptr || field->is_repeated() ||
          !FieldCarries(field->cpp_type(), option.get(TrainingOptions()))) {
        std::fprintf(stderr, "proto::JobSpec has no singular field '%s' of the setting's type\n",
                     option.name);
        std::abort();
      }
      fields->push_back({&option, field});
    }
    return fields;
  }();
  return *fields;
}

}  // namespace

proto::JobSpec JobSpecOf(const TrainingOptions& training) {
  proto::JobSpec job;
  for (const JobSpecField& field : JobSpecFields()) {
    Write(field.option->get(training), *field.field, job);
  }
  return job;
}

absl::StatusOr<TrainingOptions> TrainingOptionsOf(const proto::JobSpec& job,
                                                  const std::string& device) {
  TrainingOptions training;
  for (const JobSpecField& field : JobSpecFields()) {
    const TrainingOptionValue value = Read(job, *field.field);
    if (field.option->zero_means_unset && IsZero(value)) continue;
    if (absl::Status status = field.option->set(value, training); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("the controller's job: ", field.option->name,
                                                     "=", TrainingOptionText(value), ": ",
                                                     status.message()));
    }
  }
  training.device = device;
  return training;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, absl::string_view flag) {
  if (path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": give the file holding the token"));
  }
  absl::StatusOr<std::string> read = ReadFileToString(path);
  if (!read.ok()) return Annotate(read.status(), flag);
  const std::string token(absl::StripAsciiWhitespace(*read));
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, " is empty"));
  return token;
}

absl::StatusOr<std::string> ReadJoinToken(const std::string& path) {
  return ReadTokenFile(path, "--join_token_file");
}

absl::StatusOr<std::string> AdvertisedAddress(const std::string& advertise,
                                              const std::string& listen, int bound_port) {
  if (!advertise.empty()) {
    RETURN_IF_ERROR(Annotate(ParseHostPort(advertise).status(), "--advertise"));
    return advertise;
  }
  absl::StatusOr<HostPort> host_port = ParseHostPort(listen);
  if (!host_port.ok()) return Annotate(host_port.status(), "--listen");
  if (host_port->host == "0.0.0.0" || host_port->host == "::" || host_port->host == "[::]") {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen=", listen,
                     " binds every interface, which others cannot dial; give "
                     "--advertise=HOST:PORT, the address the other members should use"));
  }
  return HostPort{host_port->host, bound_port}.ToString();
}

}  // namespace ringside::server
