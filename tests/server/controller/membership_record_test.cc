// The controller's membership record on disk: what is written reads back the same, and a file
// that is not a record is refused with a message rather than half-restored.
#include "server/controller/membership_record.h"

#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "common/file_util.h"
#include "gtest/gtest.h"

namespace ringside::server {
namespace {

MembershipRecord SampleRecord() {
  MembershipRecord record;
  record.next_id = 9;
  const std::string credential(40, 'x');
  record.members = {{3, MemberRole::kWorker, "worker-a.test:7000", credential},
                    {5, MemberRole::kShard, "shard-a.test:8000", credential},
                    {8, MemberRole::kWorker, "[::1]:7001", credential}};
  record.topology = Topology{7, SyncMode::kPs, {8, 3}, {5}};
  return record;
}

TEST(MembershipRecordTest, WhatIsSavedLoadsBackTheSame) {
  char dir_template[] = "/tmp/ringside-record-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  auto none = LoadMembershipRecord(dir);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value()) << "a first start has no record";

  ASSERT_TRUE(SaveMembershipRecord(dir, SampleRecord()).ok());
  auto loaded = LoadMembershipRecord(dir);
  ASSERT_TRUE(loaded.ok() && loaded->has_value()) << loaded.status();
  const MembershipRecord& record = **loaded;
  EXPECT_EQ(record.next_id, 9u);
  EXPECT_EQ(record.topology.generation, 7u);
  EXPECT_EQ(record.topology.mode, SyncMode::kPs);
  EXPECT_EQ(record.topology.workers, (std::vector<uint64_t>{8, 3}));
  EXPECT_EQ(record.topology.shards, std::vector<uint64_t>{5});
  ASSERT_EQ(record.members.size(), 3u);
  EXPECT_EQ(record.members[1].role, MemberRole::kShard);
  EXPECT_EQ(record.members[2].address, "[::1]:7001");

  // Restored into a membership, the record is the same again.
  Membership membership(MembershipConfig{});
  ASSERT_TRUE(membership.Restore(record, absl::Now()).ok());
  EXPECT_EQ(MembershipRecordJson(membership.Record()), MembershipRecordJson(SampleRecord()));

  ASSERT_TRUE(WriteFileAtomically(MembershipRecordPath(dir), "{\"format\": 5}").ok());
  auto junk = LoadMembershipRecord(dir);
  EXPECT_EQ(junk.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(junk.status().message().find("move it aside"), std::string::npos) << junk.status();
  unlink(MembershipRecordPath(dir).c_str());
  rmdir(dir.c_str());
}

TEST(MembershipRecordTest, RefusesWhatIsNotARecord) {
  for (const std::string& text : {
           std::string(""),
           std::string("[]"),
           std::string("{not json"),
           std::string("{\"format\": \"ringside-membership/2\"}"),
           std::string("{\"format\": \"ringside-membership/1\", \"next_id\": -1}"),
           std::string("{\"format\": \"ringside-membership/1\", \"next_id\": 2, \"generation\": "
                       "1, \"mode\": \"both\", \"workers\": [], \"shards\": [], \"members\": []}"),
           std::string("{\"format\": \"ringside-membership/1\", \"next_id\": 2, \"generation\": "
                       "1, \"mode\": \"ring\", \"workers\": [\"x\"], \"shards\": [], "
                       "\"members\": []}"),
           std::string("{\"format\": \"ringside-membership/1\", \"next_id\": 2, \"generation\": "
                       "1, \"mode\": \"ring\", \"workers\": [], \"shards\": [], \"members\": "
                       "[{\"id\": 1, \"role\": \"boss\", \"address\": \"a.test:1\", "
                       "\"credential\": \"cccccccccccccccccccccccccccccccccccc\"}]}"),
       }) {
    EXPECT_EQ(ParseMembershipRecord(text).status().code(), absl::StatusCode::kInvalidArgument)
        << text;
  }
  EXPECT_TRUE(ParseMembershipRecord(MembershipRecordJson(SampleRecord())).ok());
}

}  // namespace
}  // namespace ringside::server
