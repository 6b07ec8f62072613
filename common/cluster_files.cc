#include "common/cluster_files.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace ringside {
namespace {

using nlohmann::json;

// Typed, non-throwing access to one object's fields; the first problem is kept.
class Fields {
 public:
  Fields(absl::string_view text, absl::string_view what)
      : object_(json::parse(text.begin(), text.end(), nullptr, false)), what_(what) {
    if (!object_.is_object()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(what_, " is not a JSON object (", text.size(), " bytes; cut short?)"));
    }
  }
  template <typename T>
  void Integer(const char* name, T& out) {
    if (const json* value = Find(name); value != nullptr) {
      if (value->is_number_integer()) {
        out = value->get<T>();
      } else {
        Wrong(name, "an integer");
      }
    }
  }
  void Number(const char* name, double& out) {
    if (const json* value = Find(name); value != nullptr) {
      if (value->is_number()) {
        out = value->get<double>();
      } else {
        Wrong(name, "a number");
      }
    }
  }
  void String(const char* name, std::string& out, bool required = true) {
    if (!required && status_.ok() && !object_.contains(name)) return;
    if (const json* value = Find(name); value != nullptr) {
      if (value->is_string()) {
        out = value->get<std::string>();
      } else {
        Wrong(name, "a string");
      }
    }
  }
  const absl::Status& status() const { return status_; }

 private:
  const json* Find(const char* name) {
    if (!status_.ok()) return nullptr;
    auto it = object_.find(name);
    if (it == object_.end()) {
      status_ = absl::InvalidArgumentError(absl::StrCat(what_, " has no \"", name, "\""));
      return nullptr;
    }
    return &*it;
  }
  void Wrong(const char* name, const char* kind) {
    status_ = absl::InvalidArgumentError(absl::StrCat(what_, ": \"", name, "\" is not ", kind));
  }

  const json object_;
  const std::string what_;
  absl::Status status_;
};

}  // namespace

std::string ReadyFileText(const ReadyFile& ready) {
  json out = {{"port", ready.port}, {"metrics_port", ready.metrics_port}};
  if (!ready.address.empty()) out["address"] = ready.address;
  return out.dump() + "\n";
}

absl::StatusOr<ReadyFile> ParseReadyFile(absl::string_view text) {
  ReadyFile ready;
  Fields fields(text, "ready file");
  fields.Integer("port", ready.port);
  fields.Integer("metrics_port", ready.metrics_port);
  fields.String("address", ready.address, /*required=*/false);
  if (!fields.status().ok()) return fields.status();
  return ready;
}

std::string StepTraceLineText(const StepTraceLine& line) {
  return json{{"step", line.step},       {"generation", line.generation},
              {"mode", line.mode},       {"rank", line.rank},
              {"world", line.world},     {"loss", line.loss},
              {"seconds", line.seconds}, {"checksum", line.checksum}}
      .dump();
}

absl::StatusOr<StepTraceLine> ParseStepTraceLine(absl::string_view text) {
  StepTraceLine line;
  Fields fields(text, "step trace line");
  fields.Integer("step", line.step);
  fields.Integer("generation", line.generation);
  fields.String("mode", line.mode);
  fields.Integer("rank", line.rank);
  fields.Integer("world", line.world);
  fields.Number("loss", line.loss);
  fields.Number("seconds", line.seconds);
  fields.String("checksum", line.checksum);
  if (!fields.status().ok()) return fields.status();
  return line;
}

StepTrace ReadStepTrace(const std::string& path) {
  StepTrace trace;
  std::ifstream in(path);
  for (std::string text; std::getline(in, text);) {
    absl::StatusOr<StepTraceLine> line = ParseStepTraceLine(text);
    if (line.ok()) {
      trace.lines.push_back(*std::move(line));
    } else {
      ++trace.unreadable;
    }
  }
  return trace;
}

std::string TrainResultText(const TrainResultFile& result) {
  return json{{"rank", result.rank},
              {"world", result.world},
              {"generation", result.generation},
              {"mode", result.mode},
              {"steps", result.steps},
              {"parameters", result.parameters},
              {"final_loss", result.final_loss},
              {"accuracy", result.accuracy},
              {"checksum", result.checksum},
              {"metrics_port", result.metrics_port}}
             .dump() +
         "\n";
}

absl::StatusOr<TrainResultFile> ParseTrainResult(absl::string_view text) {
  TrainResultFile result;
  Fields fields(text, "result file");
  fields.Integer("rank", result.rank);
  fields.Integer("world", result.world);
  fields.Integer("generation", result.generation);
  fields.String("mode", result.mode);
  fields.Integer("steps", result.steps);
  fields.Integer("parameters", result.parameters);
  fields.Number("final_loss", result.final_loss);
  fields.Number("accuracy", result.accuracy);
  fields.String("checksum", result.checksum);
  fields.Integer("metrics_port", result.metrics_port);
  if (!fields.status().ok()) return fields.status();
  return result;
}

}  // namespace ringside
