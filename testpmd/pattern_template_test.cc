// Pattern templates (pattern_template.h): for random slot values, a template's match value equals the
// translation of the pattern written with those values; patterns whose values mean more than their bits
// are refused.
#include "testpmd/pattern_template.h"

#include <cstring>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testpmd/parser.h"
#include "testpmd/values.h"

namespace drsim::testpmd {
namespace {

using ::testing::HasSubstr;

std::vector<Item> Pattern(const std::string& pattern) {
  absl::StatusOr<Command> c =
      ParseOne(absl::StrCat("flow create 0 ingress pattern ", pattern, " / end actions drop / end"));
  EXPECT_TRUE(c.ok()) << pattern << ": " << c.status();
  return c.ok() ? std::get<FlowCreateCmd>(c->body).rule.pattern : std::vector<Item>{};
}

// The slots of `items`: every field of a template item that can be a slot, given with is or spec, but
// `other` (the field a vlan item's value was not given to: tci and vid share its word).
std::vector<PatternSlot> SlotsOf(const std::vector<Item>& items, absl::string_view other = "tci") {
  std::vector<PatternSlot> slots;
  for (size_t i = 0; i < items.size(); ++i) {
    for (const FieldDef& f : items[i].def->fields) {
      if (CanBeSlot(*items[i].def, f) && items[i].words[f.storage].spec_set && f.name != other) {
        slots.push_back(PatternSlot{static_cast<uint16_t>(i), &f});
      }
    }
  }
  return slots;
}

PatternContext Context(bool root_table) {
  PatternContext ctx;
  ctx.domain = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
  ctx.root_table = root_table;
  return ctx;
}

bool SameBytes(const hw::MatchParams& a, const hw::MatchParams& b) {
  return std::memcmp(a.bytes(), b.bytes(), hw::kMatchParamBytes) == 0;
}

TEST(PatternTemplateTest, GivesTheTranslationOfEveryValue) {
  const char* const kPatterns[] = {
      "eth / ipv4 src is 10.0.0.1 dst is 192.0.2.7 / udp src is 5 dst is 53",
      "eth src is 02:00:00:00:00:01 dst is 0c:42:a1:00:00:02 / ipv6 src is 2001:db8::1 dst is ::2 / tcp "
      "src spec 1 src mask 0xff00 dst is 80",
      "eth / ipv4 src spec 10.0.0.0 src mask 255.0.0.0 dst spec 1.2.3.0 dst prefix 24 / tcp dst spec 1024 "
      "dst mask 0xfc00",
      "eth type is 0x0800 / ipv4 proto is 17 src spec 10.1.2.3 / void / udp dst spec 4789",
      // VLAN ids, TOS and TTL, VNIs, and ICMP and GRE items around slots.
      "eth / vlan vid is 100 / ipv4 src is 10.0.0.1 tos is 4 ttl is 64 / udp dst is 4789 / vxlan vni is 42",
      "eth / vlan tci is 0x2005 / ipv6 src is ::1 / tcp dst is 22",
      "eth / ipv4 / udp / vxlan-gpe vni is 7",
      "eth / ipv4 src is 10.0.0.1 / icmp type is 8 code is 0",
      "eth / ipv6 dst is fe80::1 / icmp6 type is 135",
      "eth / ipv4 dst is 1.2.3.4 / gre",
  };
  std::mt19937_64 rng(20261202);
  for (const char* text : kPatterns) {
    for (bool root : {false, true}) {
      SCOPED_TRACE(absl::StrCat(text, root ? " (root table)" : ""));
      std::vector<Item> items = Pattern(text);
      const std::vector<PatternSlot> slots =
          SlotsOf(items, absl::StrContains(text, "tci is") ? "vid" : "tci");
      ASSERT_FALSE(slots.empty());
      absl::StatusOr<PatternTemplate> t = PatternTemplate::Make(items, slots, Context(root));
      ASSERT_TRUE(t.ok()) << t.status();
      EXPECT_EQ(t->slots(), slots.size());
      for (int round = 0; round < 200; ++round) {
        std::vector<absl::uint128> values;
        for (const PatternSlot& s : slots) {
          const absl::uint128 v = absl::MakeUint128(rng(), rng()) & Ones(s.field->width);
          values.push_back(round == 0 ? 0 : round == 1 ? Ones(s.field->width) : v);
          absl::uint128& spec = items[s.item].words[s.field->storage].spec;
          spec = (spec & ~(Ones(s.field->width) << s.field->shift)) | (values.back() << s.field->shift);
        }
        absl::StatusOr<TranslatedPattern> expected = TranslatePattern(items, Context(root));
        ASSERT_TRUE(expected.ok()) << expected.status();
        hw::MatchParams value;
        t->ValueInto(values, &value);
        ASSERT_TRUE(SameBytes(value, expected->value)) << "round " << round;
        ASSERT_TRUE(SameBytes(t->mask(), expected->mask));
      }
    }
  }
}

TEST(PatternTemplateTest, RefusesValuesThatMeanMoreThanTheirBits) {
  const PatternContext ctx = Context(false);
  // An ethertype is no slot: 0x0800 under a full mask is matched as ip_version.
  const std::vector<Item> eth = Pattern("eth type is 0x0800 / ipv4 src is 10.0.0.1");
  EXPECT_FALSE(CanBeSlot(*eth[0].def, eth[0].def->fields[2]));
  const PatternSlot type{0, &eth[0].def->fields[2]};
  EXPECT_EQ(PatternTemplate::Make(eth, {type}, ctx).status().code(), absl::StatusCode::kFailedPrecondition);

  // IP's protocol is no slot: 0 conflicts with the UDP item after it.
  const std::vector<Item> proto = Pattern("eth / ipv4 proto is 17 / udp dst is 53");
  EXPECT_FALSE(CanBeSlot(*proto[1].def, proto[1].def->fields[6]));
  EXPECT_FALSE(PatternTemplate::Make(proto, {PatternSlot{1, &proto[1].def->fields[6]}}, ctx).ok());

  // Items other than the template items (a GENEVE header), ranges, and a field twice.
  const std::vector<Item> geneve =
      Pattern("eth / ipv4 / udp / geneve vni is 5 / eth dst is 02:00:00:00:00:01");
  absl::Status s = PatternTemplate::Make(geneve, SlotsOf(geneve), ctx).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("an item other than"));
  const std::vector<Item> range = Pattern("eth / ipv4 src spec 10.0.0.1 src last 10.0.0.1");
  s = PatternTemplate::Make(range, SlotsOf(range), ctx).status();
  EXPECT_THAT(s.message(), HasSubstr("range"));
  const std::vector<Item> ipv4 = Pattern("eth / ipv4 src is 10.0.0.1");
  const std::vector<PatternSlot> twice = {SlotsOf(ipv4)[0], SlotsOf(ipv4)[0]};
  s = PatternTemplate::Make(ipv4, twice, ctx).status();
  EXPECT_THAT(s.message(), HasSubstr("two slots"));
  // No slots: the pattern's one value (a flow whose mark's id varies).
  absl::StatusOr<PatternTemplate> fixed = PatternTemplate::Make(ipv4, {}, ctx);
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_EQ(fixed->slots(), 0u);
  hw::MatchParams value;
  fixed->ValueInto({}, &value);
  absl::StatusOr<TranslatedPattern> expected = TranslatePattern(ipv4, ctx);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_TRUE(SameBytes(value, expected->value));
  EXPECT_TRUE(SameBytes(fixed->mask(), expected->mask));

  // The pattern's own errors come back as they are.
  const std::vector<Item> two_l3 = Pattern("eth / ipv4 src is 10.0.0.1 / ipv6 src is ::1");
  s = PatternTemplate::Make(two_l3, SlotsOf(two_l3), ctx).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("second L3 item"));
}

// The cache makes one template for patterns that differ only in their slots' values, and one more for
// each difference elsewhere (a mask, an item, the slots, the context's root-ness, domain or implicit source
// vport); what it gives writes what a template made afresh writes.
TEST(PatternTemplateCacheTest, MakesOneTemplatePerPatternWhateverItsSlotValues) {
  PatternTemplateCache cache;
  const std::vector<Item> a = Pattern("eth / ipv4 src is 10.0.0.1 dst spec 10.1.0.0 dst mask 255.255.0.0");
  const std::vector<Item> a_other =
      Pattern("eth / ipv4 src is 10.9.8.7 dst spec 10.7.0.0 dst mask 255.255.0.0");
  const std::vector<Item> b = Pattern("eth / ipv4 src is 10.0.0.1 dst spec 10.1.2.0 dst mask 255.255.255.0");
  const std::vector<Item> c =
      Pattern("eth / ipv4 src is 10.0.0.1 dst spec 10.1.0.0 dst mask 255.255.0.0 / udp");
  const std::vector<PatternSlot> slots = SlotsOf(a);
  ASSERT_EQ(slots.size(), 2u);
  auto fdb = [](uint16_t vport) {
    PatternContext ctx;
    ctx.domain = MLX5DV_DR_DOMAIN_TYPE_FDB;
    ctx.implicit_source_vport = vport;
    return ctx;
  };
  std::mt19937_64 rng(20261202);
  auto same_as_fresh = [&](const std::vector<Item>& items, const std::vector<PatternSlot>& s,
                           const PatternContext& ctx) {
    absl::StatusOr<PatternTemplate> cached = cache.Make(items, s, ctx);
    absl::StatusOr<PatternTemplate> fresh = PatternTemplate::Make(items, s, ctx);
    ASSERT_TRUE(cached.ok()) << cached.status();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    EXPECT_TRUE(SameBytes(cached->mask(), fresh->mask()));
    for (int round = 0; round < 20; ++round) {
      std::vector<absl::uint128> values;
      for (const PatternSlot& slot : s)
        values.push_back(absl::MakeUint128(rng(), rng()) & Ones(slot.field->width));
      hw::MatchParams from_cached, from_fresh;
      cached->ValueInto(values, &from_cached);
      fresh->ValueInto(values, &from_fresh);
      ASSERT_TRUE(SameBytes(from_cached, from_fresh)) << "round " << round;
    }
  };
  same_as_fresh(a, slots, Context(false));
  EXPECT_EQ(cache.made(), 1u);
  same_as_fresh(a_other, slots, Context(false));  // other values in the slots: the same template
  EXPECT_EQ(cache.made(), 1u);
  same_as_fresh(b, slots, Context(false));  // another mask
  EXPECT_EQ(cache.made(), 2u);
  same_as_fresh(c, SlotsOf(c), Context(false));  // another item
  EXPECT_EQ(cache.made(), 3u);
  same_as_fresh(a, {slots[0]}, Context(false));  // other slots
  EXPECT_EQ(cache.made(), 4u);
  same_as_fresh(a, slots, Context(true));  // a root table: ip_version's mask differs
  EXPECT_EQ(cache.made(), 5u);
  same_as_fresh(a_other, slots, Context(true));
  EXPECT_EQ(cache.made(), 5u);
  same_as_fresh(a, slots, fdb(1));  // the FDB, matching the source vport the rule's port gives
  EXPECT_EQ(cache.made(), 6u);
  same_as_fresh(a_other, slots, fdb(2));  // another port's vport
  EXPECT_EQ(cache.made(), 7u);
  same_as_fresh(a_other, slots, fdb(1));
  EXPECT_EQ(cache.made(), 7u);
  // A pattern that is no template is refused as PatternTemplate::Make refuses it, every time.
  const std::vector<Item> geneve =
      Pattern("eth / ipv4 / udp / geneve vni is 5 / eth dst is 02:00:00:00:00:01");
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(cache.Make(geneve, SlotsOf(geneve), Context(false)).status().code(),
              absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(cache.Make(a, {PatternSlot{0, nullptr}}, Context(false)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// Past kMaxTemplates the cache starts over: it holds no more than that, and still finds what it made since.
TEST(PatternTemplateCacheTest, StartsOverPastItsLimit) {
  PatternTemplateCache cache;
  const size_t limit = PatternTemplateCache::kMaxTemplates;
  std::vector<Item> items = Pattern("eth / ipv4 src is 10.0.0.1 dst spec 10.1.0.0 dst mask 255.255.0.0");
  const std::vector<PatternSlot> slots = SlotsOf(items);
  ItemWord& dst = items[1].words[slots[1].field->storage];
  // Patterns that differ in the destination's mask (a word outside the slots).
  auto with_mask = [&](uint32_t mask) {
    dst.mask = absl::uint128(mask) << slots[1].field->shift;
    return cache.Make(items, slots, Context(false)).ok();
  };
  for (uint32_t m = 0; m <= limit; ++m) ASSERT_TRUE(with_mask(0xffff0000u | m)) << m;
  EXPECT_EQ(cache.made(), limit + 1);
  ASSERT_TRUE(with_mask(0xffff0000u | static_cast<uint32_t>(limit)));  // made after the start over: found
  EXPECT_EQ(cache.made(), limit + 1);
  ASSERT_TRUE(with_mask(0xffff0000u));  // made before it: made again
  EXPECT_EQ(cache.made(), limit + 2);
}

}  // namespace
}  // namespace drsim::testpmd
