// FlowEngine: meters (srTCM/trTCM profiles, mlx5's default policy and policies with actions, the meter
// colour item, enable/disable/delete) and sampling (flow sampler copies, mirrors through dest arrays).
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testpmd/engine.h"
#include "testpmd/engine_test_util.h"

namespace drsim::testpmd {
namespace {

using ::testing::HasSubstr;

class MeterTest : public EngineTest {
 protected:
  // Sends `n` IPv4 frames from the wire at the NIC's current time; returns their verdicts.
  std::vector<sim::Verdict> Burst(int n, const char* src = "10.7.0.1") {
    std::vector<sim::Verdict> out;
    for (int i = 0; i < n; ++i) out.push_back(nic_.ReceiveFromWire(Udp(src, "10.7.0.2", 1, 2)));
    return out;
  }
  static int CountQueued(const std::vector<sim::Verdict>& v, uint32_t qp) {
    int n = 0;
    for (const sim::Verdict& x : v) n += x.fate == sim::Fate::kQueued && x.qp_num == qp;
    return n;
  }
  static int CountDropped(const std::vector<sim::Verdict>& v) {
    int n = 0;
    for (const sim::Verdict& x : v) n += x.fate == sim::Fate::kDropped;
    return n;
  }
};

TEST_F(MeterTest, SrTcmWithTheDefaultPolicy) {
  // 1000 packets/s, a committed burst of 3 packets, no excess bucket.
  Run("add port meter profile srtcm_rfc2697 0 1 1000 3 0 1");
  Run("add port meter policy 0 1 g_actions end y_actions end r_actions drop / end");
  Run("create port meter 0 5 1 1 yes 0xffff 0 0");
  Run("flow create 0 ingress pattern end actions jump group 1 / end");
  Run("flow create 0 ingress group 1 pattern eth / ipv4 / end actions meter mtr_id 5 / mark id 7 / queue "
      "index 2 "
      "/ count / end");
  std::vector<sim::Verdict> v = Burst(10);
  EXPECT_EQ(CountQueued(v, Qp(0, 2)), 3);  // the bucket starts full
  EXPECT_EQ(CountDropped(v), 7);
  EXPECT_TRUE(v[0].has_flow_tag);
  EXPECT_EQ(v[0].flow_tag, 7u);
  EXPECT_EQ(Run("flow query 0 1 count").count->hits, 10u);  // the flow counts before the meter
  ASSERT_EQ(v[9].path.size(), 3u);
  EXPECT_EQ(engine_.DescribeRule(v[9].path[2].rule_id), "port 0 meter 5 policy red");
  EXPECT_EQ(engine_.DescribeRule(v[0].path[2].rule_id), "port 0 flow 1 meter 5 green");

  // 2 ms later, two more tokens.
  nic_.set_time_ns(2'000'000 + 100'000);
  EXPECT_EQ(CountQueued(Burst(5), Qp(0, 2)), 2);
  // Disabled, the meter passes everything green.
  Run("disable port meter 0 5");
  EXPECT_EQ(CountQueued(Burst(5), Qp(0, 2)), 5);
  Run("enable port meter 0 5");

  // Deleting what flows use is refused.
  absl::StatusOr<CommandResult> r = Try("del port meter 0 5");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Try("del port meter profile 0 1").status().code(), absl::StatusCode::kFailedPrecondition);
  Run("flow flush 0");
  Run("del port meter 0 5");
  Run("del port meter profile 0 1");
  Run("del port meter policy 0 1");
  EXPECT_EQ(engine_.counts().tables, 0);
}

TEST_F(MeterTest, TrTcmWithAPolicyOfItsOwn) {
  // trTCM (RFC 2698), packet mode: CIR 1000/s CBS 2, PIR 2000/s PBS 4.
  Run("add port meter profile trtcm_rfc2698 0 2 1000 2000 2 4 1");
  Run("add port meter policy 0 2 g_actions queue index 3 / end y_actions mark id 0x77 / queue index 4 / end "
      "r_actions drop / end");
  Run("create port meter 0 6 2 2 yes 0 0 g");
  Run("flow create 0 ingress pattern end actions jump group 1 / end");
  Run("flow create 0 ingress group 1 pattern eth / ipv4 / end actions count / meter mtr_id 6 / end");
  std::vector<sim::Verdict> v = Burst(8);
  EXPECT_EQ(CountQueued(v, Qp(0, 3)), 2);  // green: both buckets pay
  EXPECT_EQ(CountQueued(v, Qp(0, 4)), 2);  // yellow: the peak bucket only
  EXPECT_EQ(CountDropped(v), 4);
  EXPECT_EQ(v[2].flow_tag, 0x77u);

  // With a policy that decides the fate, the meter comes last and alone.
  absl::StatusOr<CommandResult> r = Try(
      "flow create 0 ingress group 1 pattern eth / ipv6 / end actions meter mtr_id 6 / queue index 1 / end");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("must be the flow's last action"));
}

TEST_F(MeterTest, ColourItemAfterAPolicyJump) {
  Run("add port meter profile srtcm_rfc2697 0 3 1000 1 1 1");  // CBS 1, EBS 1: green, yellow, red...
  Run("add port meter policy 0 3 g_actions jump group 2 / end y_actions jump group 2 / end r_actions drop / "
      "end");
  Run("create port meter 0 7 3 3 yes 0 0");
  Run("flow create 0 ingress pattern end actions jump group 1 / end");
  Run("flow create 0 ingress group 1 pattern eth / end actions meter mtr_id 7 / end");
  Run("flow create 0 ingress group 2 pattern meter color is green / end actions queue index 5 / end");
  Run("flow create 0 ingress group 2 pattern meter color is yellow / end actions queue index 6 / end");
  std::vector<sim::Verdict> v = Burst(3);
  EXPECT_EQ(v[0].qp_num, Qp(0, 5));
  EXPECT_EQ(v[1].qp_num, Qp(0, 6));
  EXPECT_EQ(v[2].fate, sim::Fate::kDropped);
}

TEST_F(MeterTest, MeterCommandErrors) {
  EXPECT_EQ(Try("create port meter 0 1 9 9 yes 0 0").status().code(), absl::StatusCode::kNotFound);
  Run("add port meter profile srtcm_rfc2697 0 1 1000 3 0");
  EXPECT_EQ(Try("add port meter profile srtcm_rfc2697 0 1 1000 3 0").status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(Try("add port meter profile trtcm_rfc2698 0 2 1000 10 3 4").status().message(),
              HasSubstr("peak rate 10"));
  EXPECT_THAT(Try("add port meter policy 0 1 g_actions count / end y_actions end r_actions drop / end")
                  .status()
                  .message(),
              HasSubstr("'count' is not a meter policy action"));
  EXPECT_THAT(Try("add port meter policy 0 1 g_actions end y_actions end r_actions queue index 0 / end")
                  .status()
                  .message(),
              HasSubstr("r_actions must be 'drop / end'"));
  EXPECT_EQ(Try("create port meter 0 1 1 1 yes 0 0 g 1").status().code(), absl::StatusCode::kUnimplemented);
  Run("add port meter policy 0 1 g_actions end y_actions end r_actions drop / end");
  Run("create port meter 0 1 1 1 yes 0 0");
  // A meter cannot run in a root table (DR's kernel path has no meter).
  absl::StatusOr<CommandResult> r =
      Try("flow create 0 ingress pattern eth / end actions meter mtr_id 1 / drop / end");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("meter: DR rejects the rule"));
}

TEST_F(EngineTest, SamplerCopiesEveryNthFrame) {
  Run("set sample_actions 0 mark id 0x1234 / queue index 0 / end");
  Run("flow create 0 ingress pattern end actions jump group 1 / end");
  Run("flow create 0 ingress group 1 pattern eth / end actions sample ratio 2 index 0 / count / queue index "
      "1 / "
      "end");
  int copies = 0;
  for (int i = 0; i < 10; ++i) {
    sim::Verdict v = nic_.ReceiveFromWire(Udp("10.8.0.1", "10.8.0.2", 1, 2));
    ASSERT_EQ(v.qp_num, Qp(0, 1));
    for (const sim::Delivery& d : v.copies) {
      EXPECT_EQ(d.qp_num, Qp(0, 0));
      EXPECT_EQ(d.flow_tag, 0x1234u);
      ++copies;
    }
  }
  EXPECT_EQ(copies, 5);
  EXPECT_EQ(nic_.function(0)->queue(Qp(0, 1))->size(), 10u);
  EXPECT_EQ(nic_.function(0)->queue(Qp(0, 0))->size(), 5u);
  EXPECT_EQ(Run("flow query 0 1 count").count->hits, 10u);

  EXPECT_THAT(
      Try("flow create 0 ingress group 1 pattern eth / end actions sample ratio 2 index 9 / drop / end")
          .status()
          .message(),
      HasSubstr("no sample action list 9"));
  Run("set sample_actions 2 vxlan_encap / queue index 0 / end");
  EXPECT_THAT(
      Try("flow create 0 ingress group 1 pattern eth / end actions sample ratio 2 index 2 / drop / end")
          .status()
          .message(),
      HasSubstr("a DR flow sampler's copy takes no encapsulation"));
}

TEST_F(EngineTest, MirrorWithEncapsulationThroughADestArray) {
  // testpmd's documented mirroring: VF1's traffic to VF2, and a VXLAN copy to the wire.
  Run("set vxlan ip-version ipv4 vni 4 udp-src 32 udp-dst 4789 ip-src 127.0.0.1 ip-dst 127.0.0.2 eth-src "
      "11:11:11:11:11:11 eth-dst 22:22:22:22:22:22");
  Run("set sample_actions 1 vxlan_encap / represented_port ethdev_port_id 0 / end");
  Run("flow create 0 transfer pattern represented_port ethdev_port_id is 1 / end actions sample ratio 1 "
      "index 1 / "
      "represented_port ethdev_port_id 2 / end");
  const std::vector<uint8_t> frame = Udp("10.9.0.1", "10.9.0.2", 1, 2);
  sim::Verdict v = nic_.function(1)->Send(frame);
  std::vector<sim::Fate> fates = {v.fate};
  for (const sim::Delivery& d : v.copies) fates.push_back(d.fate);
  EXPECT_THAT(fates, testing::UnorderedElementsAre(sim::Fate::kPort, sim::Fate::kWire));
  std::optional<std::vector<uint8_t>> vf2 = nic_.function(2)->PollPort();
  ASSERT_TRUE(vf2.has_value());
  EXPECT_EQ(*vf2, frame);
  std::optional<std::vector<uint8_t>> wire = nic_.PollWire();
  ASSERT_TRUE(wire.has_value());
  EXPECT_EQ(wire->size(), frame.size() + 50);
}

}  // namespace
}  // namespace drsim::testpmd
