#include "common/cluster_files.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/json_fields.h"
#include "nlohmann/json.hpp"

namespace ringside {

using nlohmann::json;

std::string ReadyFileText(const ReadyFile& ready) {
  json out = {{"port", ready.port}, {"metrics_port", ready.metrics_port}};
  if (!ready.address.empty()) out["address"] = ready.address;
  if (ready.range_end > ready.range_begin) {
    out["range_begin"] = ready.range_begin;
    out["range_end"] = ready.range_end;
  }
  return out.dump() + "\n";
}

absl::StatusOr<ReadyFile> ParseReadyFile(absl::string_view text) {
  ReadyFile ready;
  JsonFields fields(text, "ready file");
  fields.Read("port", ready.port);
  fields.Read("metrics_port", ready.metrics_port);
  fields.Read("address", ready.address, /*required=*/false);
  fields.Read("range_begin", ready.range_begin, /*required=*/false);
  fields.Read("range_end", ready.range_end, /*required=*/false);
  if (!fields.status().ok()) return fields.status();
  if (ready.port <= 0 || ready.port > 65535 || ready.metrics_port < 0 ||
      ready.metrics_port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("ready file: port ", ready.port,
                                                   " or metrics_port ", ready.metrics_port,
                                                   " is not a TCP port"));
  }
  if (ready.range_begin < 0 || ready.range_end < ready.range_begin) {
    return absl::InvalidArgumentError(absl::StrCat("ready file: range [", ready.range_begin, ", ",
                                                   ready.range_end, ") is not a range"));
  }
  return ready;
}

std::string StepTraceLineText(const StepTraceLine& line) {
  return json{{"step", line.step},
              {"generation", line.generation},
              {"mode", line.mode},
              {"rank", line.rank},
              {"world", line.world},
              {"loss", line.loss},
              {"seconds", line.seconds},
              {"checksum", line.checksum},
              {"compute_seconds", line.compute_seconds},
              {"sync_seconds", line.sync_seconds},
              {"update_seconds", line.update_seconds},
              {"overlap_seconds", line.overlap_seconds},
              {"unix_seconds", line.unix_seconds}}
      .dump();
}

absl::StatusOr<StepTraceLine> ParseStepTraceLine(absl::string_view text) {
  StepTraceLine line;
  JsonFields fields(text, "step trace line");
  fields.Read("step", line.step);
  fields.Read("generation", line.generation);
  fields.Read("mode", line.mode);
  fields.Read("rank", line.rank);
  fields.Read("world", line.world);
  fields.Read("loss", line.loss);
  fields.Read("seconds", line.seconds);
  fields.Read("checksum", line.checksum);
  fields.Read("compute_seconds", line.compute_seconds, /*required=*/false);
  fields.Read("sync_seconds", line.sync_seconds, /*required=*/false);
  fields.Read("update_seconds", line.update_seconds, /*required=*/false);
  fields.Read("overlap_seconds", line.overlap_seconds, /*required=*/false);
  fields.Read("unix_seconds", line.unix_seconds, /*required=*/false);
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

std::string EvaluationLineText(const EvaluationLine& line) {
  json out = {{"step", line.step},
              {"seconds", line.seconds},
              {"test_accuracy", line.test_accuracy},
              {"test_loss", line.test_loss},
              {"loss", line.loss},
              {"eval_seconds", line.eval_seconds}};
  if (line.sent_bytes >= 0) out["sent_bytes"] = line.sent_bytes;
  return out.dump();
}

absl::StatusOr<EvaluationLine> ParseEvaluationLine(absl::string_view text) {
  EvaluationLine line;
  JsonFields fields(text, "evaluation line");
  fields.Read("step", line.step);
  fields.Read("seconds", line.seconds);
  fields.Read("test_accuracy", line.test_accuracy);
  fields.Read("test_loss", line.test_loss);
  fields.Read("loss", line.loss);
  fields.Read("eval_seconds", line.eval_seconds);
  fields.Read("sent_bytes", line.sent_bytes, /*required=*/false);
  if (!fields.status().ok()) return fields.status();
  if (line.step < 0 || !(line.test_accuracy >= 0 && line.test_accuracy <= 1) ||
      line.sent_bytes < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("evaluation line: step ", line.step, ", test_accuracy ", line.test_accuracy,
                     " or sent_bytes ", line.sent_bytes, " out of range"));
  }
  return line;
}

Evaluations ReadEvaluations(const std::string& path) {
  Evaluations evaluations;
  std::ifstream in(path);
  for (std::string text; std::getline(in, text);) {
    absl::StatusOr<EvaluationLine> line = ParseEvaluationLine(text);
    if (line.ok()) {
      evaluations.lines.push_back(*std::move(line));
    } else {
      ++evaluations.unreadable;
    }
  }
  return evaluations;
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
  JsonFields fields(text, "result file");
  fields.Read("rank", result.rank);
  fields.Read("world", result.world);
  fields.Read("generation", result.generation);
  fields.Read("mode", result.mode);
  fields.Read("steps", result.steps);
  fields.Read("parameters", result.parameters);
  fields.Read("final_loss", result.final_loss);
  fields.Read("accuracy", result.accuracy);
  fields.Read("checksum", result.checksum);
  fields.Read("metrics_port", result.metrics_port);
  if (!fields.status().ok()) return fields.status();
  return result;
}

}  // namespace ringside
