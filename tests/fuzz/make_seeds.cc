// Writes the seed corpus of every fuzz target (tests/fuzz/corpus/<target>/) from real encodings, so
// that fuzzing starts from inputs that go deep (whole collectives, complete pushes and loads,
// formed memberships, intact checkpoints) and from the inputs of the bugs found so far. Run it
// after changing an input format (tests/fuzz/fuzz_input.h):
//   build/fuzz/make_seeds tests/fuzz/corpus
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/checkpoint_store.h"
#include "common/compression.h"
#include "common/file_util.h"
#include "common/gradient_codec.h"
#include "grpcpp/support/byte_buffer.h"
#include "proto/ps.pb.h"
#include "proto/ring.pb.h"
#include "ring/segment_codec.h"
#include "server/controller/membership.h"
#include "server/controller/membership_record.h"
#include "tests/fuzz/fuzz_input.h"

namespace ringside::fuzz {
namespace {

std::string corpus_dir;

void Seed(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::string dir = absl::StrCat(corpus_dir, "/", target);
  std::error_code ignored;  // WriteFileAtomically says what went wrong
  std::filesystem::create_directories(dir, ignored);
  const absl::Status status = WriteFileAtomically(absl::StrCat(dir, "/", name), bytes);
  if (!status.ok()) {
    std::fprintf(stderr, "make_seeds: %s (does %s exist?)\n", status.ToString().c_str(),
                 dir.c_str());
    std::exit(1);
  }
}

std::string Flat(grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) std::abort();
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

void RingSeeds() {
  namespace op = ring_ops;
  const char* target = "ring_segment";
  // World 3, rank 1, 10 elements (chunks of 4, 3, 3), queue limit 2 KiB: two whole collectives
  // taken as they arrive, then two more queued ahead and taken after.
  FuzzWriter whole;
  whole.Byte(1).Byte(1).Byte(10).Byte(31);
  for (int i = 0; i < 6; ++i) whole.Byte(op::kNextSegment).Byte(2).Byte(i).Byte(op::kNext);
  whole.Byte(op::kBeginCollective).Byte(1);
  for (int i = 0; i < 6; ++i) whole.Byte(op::kNextSegment).Byte(2).Byte(i).Byte(op::kNext);
  whole.Byte(op::kBeginCollective).Byte(1);
  for (int i = 0; i < 10; ++i) whole.Byte(op::kNextSegment).Byte(7).Byte(9);
  for (int i = 0; i < 10; ++i) whole.Byte(op::kNext);
  Seed(target, "whole_collectives", whole.data());

  // The neighbour moves to the next generation first: its segments wait until ours arrives.
  FuzzWriter held;
  held.Byte(2).Byte(2).Byte(12).Byte(31);
  held.Byte(op::kSenderGeneration).Byte(2);
  for (int i = 0; i < 3; ++i) held.Byte(op::kNextSegment).Byte(3).Byte(0);
  held.Byte(op::kNext);
  held.Byte(op::kSetTopology).Byte(0).Byte(2).Byte(2).Byte(op::kBeginCollective).Byte(1);
  for (int i = 0; i < 3; ++i) held.Byte(op::kNext);
  Seed(target, "newer_generation_held", held.data());

  // Raw messages: the codec's own encoding split across slices, protobuf's with an unknown
  // field, a truncated one, a zero tag, a segment with no dtype, and 16-bit segments
  // (--wire_dtype: float16, bfloat16).
  ring::SegmentHeader header{1,    1, 0, 0, 0, 0, 8, WireDtypeNumber(WireDtype::kFp32),
                             false};  // rank 0's chunk 0
  const std::string payload(16, '\x01');
  grpc::ByteBuffer encoded = ring::EncodeSegment(header, payload);
  const std::string codec = Flat(encoded);
  ring::SegmentHeader half_header = header;
  half_header.dtype = WireDtypeNumber(WireDtype::kFp16);
  grpc::ByteBuffer fp16_encoded = ring::EncodeSegment(half_header, std::string(8, '\x01'));
  const std::string fp16_codec = Flat(fp16_encoded);
  half_header.dtype = WireDtypeNumber(WireDtype::kBf16);
  grpc::ByteBuffer bf16_encoded = ring::EncodeSegment(half_header, std::string(8, '\x01'));
  const std::string bf16_codec = Flat(bf16_encoded);
  proto::RingSegment message;
  message.set_generation(1);
  message.set_collective(1);
  message.set_total_elements(8);
  message.set_dtype(1);
  message.set_payload(payload);
  std::string with_unknown = message.SerializeAsString() + std::string("\xa8\x01\x07", 3);
  message.clear_dtype();
  const std::string no_dtype = message.SerializeAsString();
  FuzzWriter raw;
  raw.Byte(0).Byte(1).Byte(8).Byte(31);  // world 2, rank 1: left neighbour 0
  for (const std::string& bytes :
       {codec, with_unknown, codec.substr(0, codec.size() - 3), std::string("\x08\x01\x00", 3),
        no_dtype, fp16_codec, bf16_codec}) {
    raw.Byte(op::kRawMessage).Uint(bytes.size(), 2).Bytes(bytes).Byte(5).Byte(11);
    raw.Byte(op::kNext);
  }
  Seed(target, "raw_messages", raw.data());

  // Every header field changed once, between well-formed segments.
  FuzzWriter mutated;
  mutated.Byte(1).Byte(0).Byte(9).Byte(31);
  for (uint8_t field = 0; field < 10; ++field) {
    mutated.Byte(op::kMutatedSegment).Byte(2).Byte(field).Uint(field == 9 ? 6 : 1 << field, 8);
    mutated.Byte(1);  // the cut
    mutated.Byte(op::kNextSegment).Byte(2).Byte(3).Byte(op::kNext);
  }
  Seed(target, "mutated_fields", mutated.data());

  // The local side's calls in between: streams, failures, a supersede, skipped collectives.
  FuzzWriter local;
  local.Byte(0).Byte(0).Byte(5).Byte(31);
  local.Byte(op::kNextSegment).Byte(1).Byte(2).Byte(op::kStream).Byte(0).Byte(op::kNext);
  local.Byte(op::kStream).Byte(1).Byte(op::kSenderSkip).Byte(2);
  local.Byte(op::kNextSegment).Byte(1).Byte(2).Byte(op::kFail).Byte(op::kNext);
  local.Byte(op::kBeginCollective).Byte(2).Byte(op::kNext).Byte(op::kSupersede).Byte(1);
  local.Byte(op::kNext).Byte(op::kSetTopology).Byte(1).Byte(0).Byte(0);
  local.Byte(op::kNextSegment).Byte(1).Byte(2).Byte(op::kNext);
  Seed(target, "local_side", local.data());

  // Bugs (fixed), the inputs the fuzzer found: messages the decoder took and protobuf refuses
  // or reads otherwise: no dtype (read as float32), a tag cut short, field number 0, a 7-byte
  // tag.
  Seed(target, "regression_codec_no_dtype", std::string("\x42\x23\x30\x62\x42\x60", 6));
  Seed(target, "regression_codec_truncated_tag",
       std::string("\xff\x06\xff\xff\x00\xff\xff\xff", 8));
  Seed(target, "regression_codec_field_0", std::string("\x49\x5c\xff\x61\x00\x00\xa5\x02\x00", 9));
  Seed(target, "regression_codec_overlong_tag",
       std::string("\x42\x7c\xff\x28\x32\x33\x00\xcf\xff\x80\xf6\xf6\xdc\xdc\xdc\x23\x23", 17));

  // Bug (fixed): empty segments of a newer generation were held without bound, whatever
  // max_queued_bytes said (each costs memory beyond its empty payload).
  FuzzWriter flood;
  flood.Byte(0).Byte(0).Byte(8).Byte(7);  // queue limit 512 bytes: 4 empty segments
  flood.Byte(op::kSenderGeneration).Byte(2);
  for (int i = 0; i < 40; ++i) flood.Byte(op::kMutatedSegment).Byte(0).Byte(9).Uint(0, 8).Byte(0);
  Seed(target, "regression_empty_held_flood", flood.data());
}

// ps_compressed_push_fuzzer: two workers over 10 elements in top-k at 0.2 (segments of 6 and
// 4), two whole steps, the second with each worker's first segment refused once (a changed byte,
// raw bytes) before it is pushed well; and sign over 7 elements, two workers, a push of the wrong
// length, an abandon before anything was summed and the share pushed again.
void PsCompressedPushSeeds() {
  namespace op = ps_compressed_push_ops;
  const char* target = "ps_compressed_push";
  auto values = [](FuzzWriter& out, int n, int seed) {
    for (int i = 0; i < n; ++i) out.Byte(static_cast<uint8_t>((seed * 37 + i * 11) % 256));
  };
  FuzzWriter topk;
  topk.Byte(1).Byte(9).Byte(0).Byte(50);  // 2 workers, 10 elements, top-k, F = 51/255 = 0.2
  for (int step = 0; step < 2; ++step) {
    for (int w = 0; w < 2; ++w) topk.Byte(op::kBegin).Byte(static_cast<uint8_t>(w + 1));
    for (int w = 0; w < 2; ++w) {
      if (step == 1) {
        topk.Byte(op::kAdd).Byte(static_cast<uint8_t>(w + 1)).Byte(2).Byte(6);  // a byte changed
        values(topk, 6, w);
        topk.Byte(5).Byte(0x40);
        topk.Byte(op::kAdd)
            .Byte(static_cast<uint8_t>(w + 1))
            .Byte(3)
            .Byte(6)
            .Byte(8)
            .Bytes("raw8byte");
      }
      topk.Byte(op::kAdd).Byte(static_cast<uint8_t>(w + 1)).Byte(0).Byte(6);
      values(topk, 6, w + step);
    }
    for (int w = 0; w < 2; ++w) {
      topk.Byte(op::kAdd).Byte(static_cast<uint8_t>(w + 1)).Byte(4).Byte(4);
      values(topk, 4, w * 3 + step);
      topk.Byte(op::kFinish).Byte(static_cast<uint8_t>(w + 1));
    }
  }
  Seed(target, "topk_two_steps", topk.data());

  FuzzWriter sign;
  sign.Byte(1).Byte(6).Byte(1).Byte(0);  // 2 workers, 7 elements, sign
  for (int w = 0; w < 2; ++w) sign.Byte(op::kBegin).Byte(static_cast<uint8_t>(w + 1));
  sign.Byte(op::kAdd).Byte(1).Byte(0).Byte(3);  // worker 0's 3 of 7: sets the step's length
  values(sign, 3, 1);
  sign.Byte(op::kAdd).Byte(1).Byte(253).Byte(2);  // at 3 (253 % 50), 2 where 3 are due
  values(sign, 2, 2);
  sign.Byte(op::kAbandon).Byte(1);  // nothing summed yet: it may push again
  sign.Byte(op::kBegin).Byte(1);
  for (int w = 0; w < 2; ++w) {
    for (int at = 0; at < 7; at += 3) {
      const int n = std::min(3, 7 - at);
      sign.Byte(op::kAdd).Byte(static_cast<uint8_t>(w + 1)).Byte(0).Byte(static_cast<uint8_t>(n));
      values(sign, n, at + w);
    }
    sign.Byte(op::kFinish).Byte(static_cast<uint8_t>(w + 1));
  }
  Seed(target, "sign_abandoned_and_again", sign.data());
}

// ps_push_fuzzer's worker byte: rank `w`.
uint8_t Worker(int w) { return static_cast<uint8_t>(w + 1); }
constexpr uint8_t kSameStep = 1;

void PsPushSeeds() {
  namespace op = ps_push_ops;
  const char* target = "ps_push";
  // Two workers, 6 elements: two steps pushed whole in two segments each, interleaved.
  FuzzWriter steps;
  steps.Byte(1).Byte(6).Byte(0);
  for (int step = 0; step < 2; ++step) {
    for (int w = 0; w < 2; ++w)
      steps.Byte(op::kBegin).Byte(Worker(w)).Byte(kSameStep).Byte(0).Byte(0);
    for (int half = 0; half < 2; ++half) {
      for (int w = 0; w < 2; ++w) {
        steps.Byte(op::kAdd).Byte(Worker(w)).Byte(kSameStep).Byte(0).Byte(12);
        for (int i = 0; i < 3; ++i) steps.Bytes(std::string("\x00\x00\x80\x3f", 4));  // 1.0f
      }
    }
    for (int w = 0; w < 2; ++w) steps.Byte(op::kFinish).Byte(Worker(w)).Byte(kSameStep);
    steps.Byte(op::kWait);
  }
  Seed(target, "two_whole_steps", steps.data());

  // A restored shard of three workers at step 2, 3 elements: refusals of every kind, an
  // abandoned push pushed again, a duplicate, then the state closed.
  FuzzWriter refusals;
  refusals.Byte(2).Byte(3).Byte(2);
  refusals.Byte(op::kBegin).Byte(0).Byte(kSameStep).Byte(0).Byte(0);            // rank -1
  refusals.Byte(op::kBegin).Byte(Worker(0)).Byte(3).Byte(0).Byte(0);            // a step ahead
  refusals.Byte(op::kBegin).Byte(Worker(0)).Byte(kSameStep).Byte(230).Byte(0);  // range 6
  refusals.Byte(op::kBegin).Byte(Worker(0)).Byte(kSameStep).Byte(0).Byte(250);  // generation
  refusals.Byte(op::kBegin).Byte(Worker(0)).Byte(kSameStep).Byte(0).Byte(0);
  refusals.Byte(op::kBegin).Byte(Worker(0)).Byte(kSameStep).Byte(0).Byte(0);  // twice
  refusals.Byte(op::kAdd).Byte(Worker(0)).Byte(kSameStep).Byte(0).Byte(6).Bytes("ragged");
  refusals.Byte(op::kAdd).Byte(Worker(0)).Byte(kSameStep).Byte(205).Byte(4).Bytes("four");
  refusals.Byte(op::kAdd).Byte(Worker(0)).Byte(kSameStep).Byte(0).Byte(16).Bytes(
      "too long, 16 b!!");
  refusals.Byte(op::kFinish).Byte(Worker(0)).Byte(kSameStep);  // incomplete
  refusals.Byte(op::kAbandon).Byte(Worker(0)).Byte(kSameStep);
  for (int w = 0; w < 3; ++w) {
    refusals.Byte(op::kBegin).Byte(Worker(w)).Byte(kSameStep).Byte(0).Byte(0);
    refusals.Byte(op::kAdd).Byte(Worker(w)).Byte(kSameStep).Byte(0).Byte(12).Bytes("twelve bytes");
    refusals.Byte(op::kFinish).Byte(Worker(w)).Byte(kSameStep);
  }
  refusals.Byte(op::kWait).Byte(op::kClose).Byte(0);
  refusals.Byte(op::kBegin).Byte(Worker(0)).Byte(kSameStep).Byte(0).Byte(0);
  Seed(target, "refusals_and_close", refusals.data());
}

std::string Floats(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

void PsLoadSeeds() {
  namespace op = ps_load_ops;
  const char* target = "ps_load";
  // SGD over [10, 14): 4 parameters and the step count; generation 1, 2 workers, step 3, in two
  // segments.
  FuzzWriter sgd;
  sgd.Byte(1).Byte(10).Byte(4).Byte(0);
  sgd.Byte(op::kHeaderSegment).Byte(1).Uint(2, 4).Byte(3).Byte(0).Byte(3);
  sgd.Byte(op::kHeaderSegment).Byte(0).Byte(2).Byte(op::kFinish);
  Seed(target, "sgd_load", sgd.data());

  // Adam over 5 parameters (16 elements) on a shard serving generation 2; a load of generation
  // 1 is refused, then one of generation 3 succeeds.
  FuzzWriter adam;
  adam.Byte(3).Byte(0).Byte(5).Byte(2).Byte(2);
  adam.Byte(op::kHeaderSegment).Byte(1).Uint(3, 4).Byte(0).Byte(0).Byte(15);
  adam.Byte(op::kHeaderSegment).Byte(3).Uint(3, 4).Byte(0).Byte(0).Byte(15);
  adam.Byte(op::kHeaderSegment).Byte(0).Byte(1).Byte(op::kFinish);
  Seed(target, "adam_load_after_older", adam.data());

  // A serialised PsStateSegment carrying the whole state, then one with every field set wrong.
  proto::PsStateSegment segment;
  segment.set_generation(4);
  segment.set_workers(1);
  segment.set_step(2);
  segment.set_range_begin(7);
  segment.set_range_elements(2);
  segment.set_state_elements(3);
  segment.set_payload(Floats({0.5f, -0.5f, 2.0f}));
  const std::string whole = segment.SerializeAsString();
  segment.set_offset(9);
  segment.set_state_elements(1ull << 40);
  const std::string wrong = segment.SerializeAsString();
  FuzzWriter raw;
  raw.Byte(1).Byte(7).Byte(2).Byte(0);
  raw.Byte(op::kRawSegment).Uint(whole.size(), 2).Bytes(whole).Byte(op::kFinish);
  raw.Byte(op::kRawSegment).Uint(wrong.size(), 2).Bytes(wrong).Byte(op::kFinish);
  Seed(target, "raw_segments", raw.data());

  // Bug (fixed): a load announcing 2^31 - 1 workers made the shard allocate 80 GiB of shares.
  FuzzWriter huge;
  huge.Byte(1).Byte(0).Byte(4).Byte(0);
  huge.Byte(op::kHeaderSegment).Byte(1).Uint(0x7fffffff, 4).Byte(0).Byte(0).Byte(5);
  huge.Byte(op::kFinish);
  Seed(target, "regression_huge_workers", huge.data());

  // Bug (fixed): the job changing during a load (a new assignment) made FinishLoad cut the
  // state by the new range, past its end.
  FuzzWriter changed;
  changed.Byte(1).Byte(0).Byte(4).Byte(0);
  changed.Byte(op::kHeaderSegment).Byte(1).Uint(1, 4).Byte(0).Byte(0).Byte(2);
  changed.Byte(op::kSetJob).Byte(0).Byte(11).Byte(0);
  changed.Byte(op::kHeaderSegment).Byte(0).Byte(3).Byte(op::kFinish);
  Seed(target, "regression_job_changed_during_load", changed.data());
}

constexpr uint8_t kRightToken = 0, kWorkerRole = 0, kShardRole = 1;

void MembershipSeeds() {
  namespace op = membership_ops;
  const char* target = "membership";
  // Two workers and a shard form generation 1; heartbeats; a worker is replaced at its address;
  // one falls silent and expires; ps mode; a late worker; a restart with the record.
  FuzzWriter life;
  life.Byte(1).Byte(1).Byte(0);
  for (uint8_t address : {0, 1}) {
    life.Byte(op::kRegister).Byte(kRightToken).Byte(kWorkerRole).Byte(address).Byte(1);
  }
  life.Byte(op::kRegister).Byte(kRightToken).Byte(kShardRole).Byte(2).Byte(1);
  for (uint8_t member : {0, 1, 2}) life.Byte(op::kHeartbeat).Byte(member).Byte(1).Byte(1);
  life.Byte(op::kRegister).Byte(kRightToken).Byte(kWorkerRole).Byte(1).Byte(1);  // replaced
  life.Byte(op::kRegister).Byte(255).Byte(kWorkerRole).Byte(3).Byte(1);          // wrong token
  life.Byte(op::kRegister).Byte(kRightToken).Byte(kWorkerRole).Byte(230).Bytes("bad:00").Byte(0);
  life.Byte(op::kExpire).Byte(8);
  for (uint8_t member : {2, 3}) life.Byte(op::kHeartbeat).Byte(member).Byte(1).Byte(0);
  life.Byte(op::kExpire).Byte(15);
  life.Byte(op::kSetMode).Byte(1);
  life.Byte(op::kRegister).Byte(kRightToken).Byte(kWorkerRole).Byte(4).Byte(1);
  life.Byte(op::kRoundTrip).Byte(op::kExpire).Byte(15).Byte(op::kExpire).Byte(15);
  Seed(target, "form_replace_expire_restart", life.data());

  // A record restored from JSON, then carried on.
  server::MembershipRecord record;
  record.next_id = 5;
  record.members = {{1, server::MemberRole::kWorker, "10.0.0.1:7000", std::string(32, 'k')},
                    {3, server::MemberRole::kShard, "10.0.0.3:7000", std::string(32, 'k')},
                    {4, server::MemberRole::kWorker, "10.0.0.4:7000", std::string(32, 'k')}};
  record.topology = {7, SyncMode::kPs, {4, 1}, {3}};
  const std::string json = server::MembershipRecordJson(record);
  FuzzWriter restore;
  restore.Byte(1).Byte(1).Byte(1);
  restore.Byte(op::kRestoreJson).Uint(json.size(), 2).Bytes(json);
  restore.Byte(op::kHeartbeat).Byte(4).Byte(1).Byte(0);
  restore.Byte(op::kRegister).Byte(kRightToken).Byte(kWorkerRole).Byte(5).Byte(1);
  restore.Byte(op::kExpire).Byte(15).Byte(op::kExpire).Byte(15);
  Seed(target, "restore_json", restore.data());

  // Bugs (fixed), each a restore of an edited record the controller took: a topology naming a
  // worker twice; next id 0 (the next registration got id 0); a next id at the end of the ids
  // (the next registration wrapped around); a generation at the end (the next one was 0).
  FuzzWriter twice;
  twice.Byte(1).Byte(0).Byte(0);
  for (uint8_t address : {0, 1}) {
    twice.Byte(op::kRegister).Byte(kRightToken).Byte(kWorkerRole).Byte(address).Byte(0);
  }
  twice.Byte(op::kRestoreEdited).Byte(2).Byte(0);
  Seed(target, "regression_worker_named_twice", twice.data());
  FuzzWriter zero;
  zero.Byte(0).Byte(0).Byte(0);
  zero.Byte(op::kRestoreEdited).Byte(0).Byte(0);
  zero.Byte(op::kRegister).Byte(kRightToken).Byte(kWorkerRole).Byte(0).Byte(0);
  Seed(target, "regression_next_id_zero", zero.data());
  FuzzWriter wrap;
  wrap.Byte(0).Byte(0).Byte(0);
  wrap.Byte(op::kRestoreEdited).Byte(6).Byte(0);
  for (uint8_t address : {0, 1}) {
    wrap.Byte(op::kRegister).Byte(kRightToken).Byte(kWorkerRole).Byte(address).Byte(0);
  }
  Seed(target, "regression_ids_wrap_around", wrap.data());
  FuzzWriter generation;
  generation.Byte(0).Byte(0).Byte(0);
  generation.Byte(op::kRegister).Byte(kRightToken).Byte(kWorkerRole).Byte(0).Byte(0);
  generation.Byte(op::kRestoreEdited).Byte(1).Byte(255).Uint(~uint64_t{0}, 8);
  generation.Byte(op::kSetMode).Byte(1).Byte(op::kSetMode).Byte(0);
  Seed(target, "regression_generation_wraps_around", generation.data());
}

void MembershipRecordSeeds() {
  const char* target = "membership_record";
  server::MembershipRecord record;
  record.next_id = 6;
  record.members = {{1, server::MemberRole::kWorker, "worker-a.test:7000", std::string(32, 'k')},
                    {2, server::MemberRole::kShard, "[::1]:8000", std::string(32, 'k')},
                    {5, server::MemberRole::kWorker, "10.0.0.5:7000", std::string(32, 'k')}};
  record.topology = {3, SyncMode::kPs, {1, 5}, {2}};
  Seed(target, "formed", server::MembershipRecordJson(record));
  Seed(target, "fresh", server::MembershipRecordJson(server::MembershipRecord{}));
  record.topology.workers = {1, 1};
  Seed(target, "regression_worker_named_twice", server::MembershipRecordJson(record));
  record.topology.workers = {1, 2};
  Seed(target, "shard_named_as_worker", server::MembershipRecordJson(record));
  record.topology.workers = {1, 5};
  record.next_id = ~uint64_t{0};
  Seed(target, "last_id", server::MembershipRecordJson(record));
  Seed(target, "wrong_format", R"({"format": "ringside-membership/2", "next_id": 1})");
  Seed(target, "not_json", "{\"format\": \"ringside-membership/1\", \"members\": [");
  Seed(target, "wrong_types",
       R"({"format": "ringside-membership/1", "next_id": -1, "generation": 1.5,)"
       R"( "mode": "ring", "workers": [true], "shards": {}, "members": [{"id": "1"}]})");
}

void CheckpointSeeds() {
  namespace flag = checkpoint_flags;
  const char* target = "checkpoint";
  const std::string dir = "/tmp/ringside-make-seeds-checkpoint";
  absl::StatusOr<CheckpointStore> store = CheckpointStore::Open(dir);
  if (!store.ok()) std::abort();
  Checkpoint checkpoint;
  checkpoint.step = 12;
  checkpoint.job = "{\"model\": \"4,3\"}";
  checkpoint.parameters = {0.25f, -1.5f, 3.0f, 8.0f};
  checkpoint.optimizer_state = {12.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  absl::StatusOr<WrittenCheckpoint> written = store->Write(checkpoint);
  if (!written.ok()) std::abort();
  absl::StatusOr<std::string> file = ReadFileToString(written->path);
  if (!file.ok()) std::abort();
  std::remove(written->path.c_str());
  std::remove(dir.c_str());
  const std::string& intact = *file;
  auto with_flags = [](uint8_t flags, const std::string& bytes) {
    return std::string(1, static_cast<char>(flags)) + bytes;
  };
  Seed(target, "intact", with_flags(flag::kNameByHeader, intact));
  std::string flipped = intact;
  flipped[40] ^= 1;
  Seed(target, "checksum_mismatch_beside_older",
       with_flags(flag::kNameByHeader | flag::kIntactOlder, flipped));
  Seed(target, "resealed_with_default_limits",
       with_flags(flag::kNameByHeader | flag::kSeal | flag::kDefaultLimits, flipped));
  Seed(target, "named_for_another_step", with_flags(3 << 4, intact));
  // Sealed, so only the sizes are wrong: 2^60 parameters; a job over the limit; one float
  // more than the file holds.
  std::string huge = intact;
  huge[27] = 0x10;
  Seed(target, "sealed_huge_count", with_flags(flag::kNameByHeader | flag::kSeal, huge));
  std::string long_job = intact;
  long_job[18] = 0x01;
  Seed(target, "sealed_long_job", with_flags(flag::kNameByHeader | flag::kSeal, long_job));
  std::string one_more = intact;
  one_more[20] += 1;
  Seed(target, "sealed_size_mismatch", with_flags(flag::kNameByHeader | flag::kSeal, one_more));
  Seed(target, "truncated", with_flags(flag::kNameByHeader, intact.substr(0, 50)));
  Seed(target, "other_version",
       with_flags(flag::kIntactOlder | (1 << 4), "RSCKPT02" + intact.substr(8)));
  Seed(target, "empty", with_flags(1 << 4, ""));
}

// Gradient codec payloads: each kind's own encoding of a segment (odd sizes), and the malformed
// ones a decoder must refuse (top-k indices repeated and out of range, a sign payload's stray
// padding bit).
void GradientCodecSeeds() {
  const char* target = "gradient_codec";
  struct Case {
    const char* name;
    codec_kinds::Kind kind;
    uint8_t fraction;  // (b % 255 + 1) / 255
    uint16_t elements;
  };
  for (const Case& c :
       {Case{"topk_13", codec_kinds::kTopK, 50, 13}, Case{"topk_1001", codec_kinds::kTopK, 2, 1001},
        Case{"sign_13", codec_kinds::kSign, 0, 13}, Case{"sign_64", codec_kinds::kSign, 0, 64},
        Case{"randomk_13", codec_kinds::kRandomK, 50, 13},
        Case{"randomk_1001", codec_kinds::kRandomK, 2, 1001}}) {
    const float fraction = static_cast<float>(c.fraction % 255 + 1) / 255.0f;
    const Compression compression =
        c.kind == codec_kinds::kTopK   ? Compression{CompressionKind::kTopK, fraction}
        : c.kind == codec_kinds::kSign ? Compression{CompressionKind::kSign, 1}
                                       : Compression{CompressionKind::kRandomK, fraction};
    const std::unique_ptr<GradientCodec> codec = MakeGradientCodec(compression);
    const SegmentKey key{1, 3, 77};
    std::vector<float> values(c.elements);
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = static_cast<float>((i * 37) % 11) - 5.0f + 0.25f * static_cast<float>(i % 3);
    }
    std::string wire(codec->EncodedBytes(values.size()), '\0');
    codec->Encode(key, absl::MakeSpan(values), wire.data());
    FuzzWriter seed;
    seed.Byte(c.kind).Byte(c.fraction).Uint(c.elements, 2).Byte(3).Uint(77, 2).Bytes(wire);
    Seed(target, c.name, seed.data());
    if (c.kind == codec_kinds::kTopK && wire.size() >= 12) {
      std::string repeated = wire;  // the second index equal to the first
      std::memcpy(&repeated[8], &repeated[4], 4);
      FuzzWriter bad;
      bad.Byte(c.kind).Byte(c.fraction).Uint(c.elements, 2).Byte(3).Uint(77, 2).Bytes(repeated);
      Seed(target, absl::StrCat(c.name, "_repeated_index"), bad.data());
      std::string outside = wire;
      StoreU32(&outside[4], c.elements);
      FuzzWriter far;
      far.Byte(c.kind).Byte(c.fraction).Uint(c.elements, 2).Byte(3).Uint(77, 2).Bytes(outside);
      Seed(target, absl::StrCat(c.name, "_index_outside"), far.data());
    }
    if (c.kind == codec_kinds::kSign && c.elements % 8 != 0) {
      std::string padded = wire;
      padded.back() = static_cast<char>(padded.back() | 0x80);
      FuzzWriter bad;
      bad.Byte(c.kind).Byte(c.fraction).Uint(c.elements, 2).Byte(3).Uint(77, 2).Bytes(padded);
      Seed(target, absl::StrCat(c.name, "_padding_bit"), bad.data());
    }
  }
}

}  // namespace
}  // namespace ringside::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds CORPUS_DIR (tests/fuzz/corpus)\n");
    return 2;
  }
  ringside::fuzz::corpus_dir = argv[1];
  ringside::fuzz::RingSeeds();
  ringside::fuzz::PsPushSeeds();
  ringside::fuzz::PsCompressedPushSeeds();
  ringside::fuzz::PsLoadSeeds();
  ringside::fuzz::MembershipSeeds();
  ringside::fuzz::MembershipRecordSeeds();
  ringside::fuzz::CheckpointSeeds();
  ringside::fuzz::GradientCodecSeeds();
  return 0;
}
