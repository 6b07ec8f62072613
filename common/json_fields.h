// Typed, non-throwing reads of one JSON object's fields, for the files Ringside processes write
// for each other (common/cluster_files.h, common/rank_result.h). nlohmann's own accessors throw
// on a missing or mistyped field; these keep the first problem as an INVALID_ARGUMENT status
// naming the field, so a file cut short by a killed process is an error, never a crash.
#ifndef RINGSIDE_COMMON_JSON_FIELDS_H_
#define RINGSIDE_COMMON_JSON_FIELDS_H_

#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace ringside {

class JsonFields {
 public:
  // `what` names the document in messages, e.g. "result file /tmp/x.json".
  JsonFields(absl::string_view text, absl::string_view what)
      : object_(nlohmann::json::parse(text.begin(), text.end(), nullptr, false)), what_(what) {
    if (!object_.is_object()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(what_, " is not a JSON object (", text.size(), " bytes; cut short?)"));
    }
  }

  // bool: a JSON boolean; std::string: a string; an integer type: a JSON integer; a floating
  // type: any number. A missing optional field leaves `out` as it is.
  template <typename T>
  void Read(const char* name, T& out, bool required = true) {
    if (!status_.ok()) return;
    auto it = object_.find(name);
    if (it == object_.end()) {
      if (required) {
        status_ = absl::InvalidArgumentError(absl::StrCat(what_, " has no \"", name, "\""));
      }
      return;
    }
    bool type_ok;
    if constexpr (std::is_same_v<T, bool>) {
      type_ok = it->is_boolean();
    } else if constexpr (std::is_same_v<T, std::string>) {
      type_ok = it->is_string();
    } else if constexpr (std::is_integral_v<T>) {
      type_ok = it->is_number_integer();
    } else {
      type_ok = it->is_number();
    }
    if (!type_ok) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(what_, ": \"", name, "\" has the wrong type (", it->type_name(), ")"));
      return;
    }
    out = it->template get<T>();
  }

  const absl::Status& status() const { return status_; }

 private:
  const nlohmann::json object_;
  const std::string what_;
  absl::Status status_;
};

}  // namespace ringside

#endif  // RINGSIDE_COMMON_JSON_FIELDS_H_
