#include "common/cluster_probe.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/json_fields.h"
#include "common/status_macros.h"

namespace ringside {
namespace {

constexpr char kFormat[] = "ringside-probe";

absl::Status ReadLinks(const nlohmann::json& links, const std::string& what,
                       std::vector<LinkProbe>& out) {
  if (!links.is_array()) return absl::InvalidArgumentError(what + ": \"links\" is not a list");
  for (const nlohmann::json& item : links) {
    LinkProbe link;
    JsonFields fields(item.dump(), what + " links[" + std::to_string(out.size()) + "]");
    fields.Read("link", link.link);
    fields.Read("latency_seconds", link.latency_seconds);
    fields.Read("bytes_per_second", link.bytes_per_second);
    fields.Read("device", link.device, /*required=*/false);
    fields.Read("compute_seconds_per_sample", link.compute_seconds_per_sample, /*required=*/false);
    fields.Read("usable_cores", link.usable_cores, /*required=*/false);
    if (!fields.status().ok()) return fields.status();
    if (!(link.bytes_per_second > 0) || !(link.latency_seconds >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": link ", link.link, " has a rate or latency out of range"));
    }
    if (!link.device.empty() &&
        (!(link.compute_seconds_per_sample > 0) || !(link.usable_cores > 0))) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": member of link ", link.link, " has a profile out of range"));
    }
    out.push_back(std::move(link));
  }
  return absl::OkStatus();
}

}  // namespace

nlohmann::json ClusterProbeJson(const ClusterProbe& probe) {
  nlohmann::json links = nlohmann::json::array();
  for (const LinkProbe& link : probe.links) {
    nlohmann::json item = {{"link", link.link},
                           {"latency_seconds", link.latency_seconds},
                           {"bytes_per_second", link.bytes_per_second}};
    if (!link.device.empty()) {
      item["device"] = link.device;
      item["compute_seconds_per_sample"] = link.compute_seconds_per_sample;
      item["usable_cores"] = link.usable_cores;
    }
    links.push_back(std::move(item));
  }
  const ClusterCosts& costs = probe.costs;
  return {{"format", kFormat},
          {"version", probe.version},
          {"model", probe.model},
          {"activation", probe.activation},
          {"device", probe.device},
          {"link_latency_seconds", costs.link_latency_seconds},
          {"link_bytes_per_second", costs.link_bytes_per_second},
          {"compute_seconds_per_sample", costs.compute_seconds_per_sample},
          {"sync_cpu_seconds_per_byte", costs.sync_cpu_seconds_per_byte},
          {"cores_per_process", costs.cores_per_process},
          {"shard_bytes_per_second", costs.shard_bytes_per_second},
          {"links", std::move(links)}};
}

absl::Status WriteClusterProbe(const std::string& path, const ClusterProbe& probe) {
  return WriteFileAtomically(path, ClusterProbeJson(probe).dump(2) + "\n");
}

absl::StatusOr<ClusterProbe> ReadClusterProbe(const std::string& path) {
  const absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("probe file: ", text.status().message()));
  }
  const std::string what = "probe file " + path;
  ClusterProbe probe;
  std::string format;
  JsonFields fields(*text, what);
  fields.Read("format", format);
  fields.Read("version", probe.version);
  if (!fields.status().ok()) return fields.status();
  if (format != kFormat) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " is a \"", format, "\" file, not a ringside probe"));
  }
  if (probe.version != kClusterProbeVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " has format version ", probe.version, "; this ringside reads version ",
                     kClusterProbeVersion, ": run the probe again (ringside plan --probe_out)"));
  }
  ClusterCosts& costs = probe.costs;
  fields.Read("model", probe.model);
  fields.Read("activation", probe.activation);
  fields.Read("device", probe.device);
  fields.Read("link_latency_seconds", costs.link_latency_seconds);
  fields.Read("link_bytes_per_second", costs.link_bytes_per_second);
  fields.Read("compute_seconds_per_sample", costs.compute_seconds_per_sample);
  fields.Read("sync_cpu_seconds_per_byte", costs.sync_cpu_seconds_per_byte);
  fields.Read("cores_per_process", costs.cores_per_process);
  fields.Read("shard_bytes_per_second", costs.shard_bytes_per_second);
  if (!fields.status().ok()) return fields.status();
  // A cluster of one worker and one shard checks every cost's range.
  const PlanJob one{.parameters = 1, .element_bytes = 4, .global_batch = 1};
  if (absl::Status valid = CheckPlanInput(one, PlanCluster{}, costs); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", valid.message()));
  }
  const nlohmann::json object = nlohmann::json::parse(*text, nullptr, false);
  if (object.contains("links")) RETURN_IF_ERROR(ReadLinks(object["links"], what, probe.links));
  return probe;
}

absl::Status CheckProbeMatchesModel(const ClusterProbe& probe, const std::string& path,
                                    const std::string& model, const std::string& activation) {
  if (probe.model == model && probe.activation == activation) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "probe file ", path, " measured --model=", probe.model, " --activation=", probe.activation,
      ", not this job's --model=", model, " --activation=", activation,
      ": a sample's compute differs; probe again with this job's flags"));
}

}  // namespace ringside
