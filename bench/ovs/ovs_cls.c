/* ovs_cls.h on OVS's own API: the classifier, matches and flows are OVS's structures, used the way
 * ofproto uses them (ofproto.c's oftable_init and rule handling, ofproto-dpif.c's rule lookup). */
#include <config.h>

#include "bench/ovs/ovs_cls.h"

#include <stdlib.h>
#include <string.h>

#include "classifier.h"
#include "cmap.h"
#include "flow.h"
#include "openvswitch/match.h"
#include "openvswitch/meta-flow.h"
#include "openvswitch/util.h"
#include "ovs-rcu.h"
#include "packets.h"
#include "util.h"
#include "versions.h"

/* A cls_rule and what the bench knows it by. */
struct bench_rule {
    struct cls_rule cr;
    uint32_t filter;
    bool in_classifier;
};

struct ovs_cls {
    struct classifier cls;
    struct bench_rule **rules;   /* Each allocated on its own: a cls_rule must not move. */
    size_t n_rules, allocated_rules;
};

struct ovs_cls_packets {
    struct flow *flows;
    size_t n;
};

/* Every rule is visible in one version, the one lookups use. */
static const ovs_version_t version = OVS_VERSION_MIN;

struct ovs_cls *
ovs_cls_create(void)
{
    /* ovs-vswitchd gives every OpenFlow table prefix tries on these fields (ofproto.c's
     * default_prefix_fields) and staged lookup on flow_segment_u64s. */
    static const enum mf_field_id prefix_fields[] = { MFF_IPV4_DST, MFF_IPV4_SRC };
    struct ovs_cls *cls = xzalloc(sizeof *cls);

    classifier_init(&cls->cls, flow_segment_u64s);
    if (!classifier_set_prefix_fields(&cls->cls, prefix_fields, ARRAY_SIZE(prefix_fields))) {
        ovs_abort(0, "ovs_cls_create: classifier_set_prefix_fields set no prefix tries on nw_dst, nw_src");
    }
    return cls;
}

/* Frees `rule`, which is in no classifier: run by OVS's RCU once no lookup can still be reading it. */
static void
bench_rule_free(struct bench_rule *rule)
{
    cls_rule_destroy(&rule->cr);
    free(rule);
}

void
ovs_cls_destroy(struct ovs_cls *cls)
{
    /* As ofproto empties a table: the removals are published together, not one by one. */
    classifier_defer(&cls->cls);
    for (size_t i = 0; i < cls->n_rules; i++) {
        struct bench_rule *rule = cls->rules[i];
        if (rule->in_classifier) {
            classifier_remove_assert(&cls->cls, &rule->cr);
        }
        ovsrcu_postpone(bench_rule_free, rule);
    }
    classifier_destroy(&cls->cls);
    ovsrcu_quiesce();
    free(cls->rules);
    free(cls);
}

size_t
ovs_cls_add(struct ovs_cls *cls, const struct ovs_cls_match *m, int priority, uint32_t filter)
{
    struct match match;
    match_init_catchall(&match);
    match_set_dl_type(&match, htons(ETH_TYPE_IP));
    if (m->src_mask) {
        match_set_nw_src_masked(&match, htonl(m->src), htonl(m->src_mask));
    }
    if (m->dst_mask) {
        match_set_nw_dst_masked(&match, htonl(m->dst), htonl(m->dst_mask));
    }
    if (m->proto_mask) {
        match_set_nw_proto_masked(&match, m->proto, m->proto_mask);
    }
    if (m->sport_mask) {
        match_set_tp_src_masked(&match, htons(m->sport), htons(m->sport_mask));
    }
    if (m->dport_mask) {
        match_set_tp_dst_masked(&match, htons(m->dport), htons(m->dport_mask));
    }

    struct bench_rule *rule = xmalloc(sizeof *rule);
    cls_rule_init(&rule->cr, &match, priority);
    rule->filter = filter;
    classifier_insert(&cls->cls, &rule->cr, version, NULL, 0);
    rule->in_classifier = true;

    if (cls->n_rules == cls->allocated_rules) {
        cls->rules = x2nrealloc(cls->rules, &cls->allocated_rules, sizeof *cls->rules);
    }
    cls->rules[cls->n_rules] = rule;
    return cls->n_rules++;
}

void
ovs_cls_defer(struct ovs_cls *cls)
{
    classifier_defer(&cls->cls);
}

void
ovs_cls_publish(struct ovs_cls *cls)
{
    classifier_publish(&cls->cls);
}

size_t
ovs_cls_rules(const struct ovs_cls *cls)
{
    return cls->n_rules;
}

size_t
ovs_cls_subtables(const struct ovs_cls *cls)
{
    return cmap_count(&cls->cls.subtables_map);
}

/* Rule `rule` of `cls`; aborts, naming `function`, when there is no such rule. */
static struct bench_rule *
rule_at(const struct ovs_cls *cls, size_t rule, const char *function)
{
    if (rule >= cls->n_rules) {
        ovs_abort(0, "%s: rule %zu of %zu", function, rule, cls->n_rules);
    }
    return cls->rules[rule];
}

void
ovs_cls_remove(struct ovs_cls *cls, size_t rule)
{
    struct bench_rule *r = rule_at(cls, rule, "ovs_cls_remove");
    if (!r->in_classifier) {
        ovs_abort(0, "ovs_cls_remove: rule %zu is not in the classifier", rule);
    }
    classifier_remove_assert(&cls->cls, &r->cr);
    r->in_classifier = false;
}

void
ovs_cls_restore(struct ovs_cls *cls, size_t rule)
{
    struct bench_rule *r = rule_at(cls, rule, "ovs_cls_restore");
    if (r->in_classifier) {
        ovs_abort(0, "ovs_cls_restore: rule %zu is already in the classifier", rule);
    }
    classifier_insert(&cls->cls, &r->cr, version, NULL, 0);
    r->in_classifier = true;
}

void
ovs_cls_quiesce(void)
{
    ovsrcu_quiesce();
}

struct ovs_cls_packets *
ovs_cls_packets_create(const struct ovs_cls_header *headers, size_t n)
{
    struct ovs_cls_packets *packets = xmalloc(sizeof *packets);
    packets->flows = xcalloc(n, sizeof *packets->flows);
    packets->n = n;
    for (size_t i = 0; i < n; i++) {
        struct flow *flow = &packets->flows[i];
        flow->dl_type = htons(ETH_TYPE_IP);
        flow->nw_src = htonl(headers[i].src);
        flow->nw_dst = htonl(headers[i].dst);
        flow->nw_proto = headers[i].proto;
        flow->tp_src = htons(headers[i].sport);
        flow->tp_dst = htons(headers[i].dport);
    }
    return packets;
}

void
ovs_cls_packets_destroy(struct ovs_cls_packets *packets)
{
    free(packets->flows);
    free(packets);
}

void
ovs_cls_lookup(const struct ovs_cls *cls, struct ovs_cls_packets *packets, size_t first, size_t n,
               bool wildcards, int64_t *filters)
{
    if (first > packets->n || n > packets->n - first) {
        ovs_abort(0, "ovs_cls_lookup: packets [%zu, %zu) of %zu", first, first + n, packets->n);
    }
    struct flow_wildcards wc;
    for (size_t i = 0; i < n; i++) {
        if (wildcards) {
            flow_wildcards_init_catchall(&wc);
        }
        const struct cls_rule *hit = classifier_lookup(&cls->cls, version, &packets->flows[first + i],
                                                       wildcards ? &wc : NULL);
        filters[i] = hit ? CONTAINER_OF(hit, struct bench_rule, cr)->filter : -1;
    }
}
