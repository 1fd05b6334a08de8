/* Open vSwitch's flow classifier (lib/classifier.c of libopenvswitch.a, built by bench/ovs/build_ovs.sh) as
 * bench/ovs_classifier_bench.cc's peer: a narrow C interface, because OVS's internal headers are C only
 * (typeof, implicit void * conversions) and lib/ holds wrappers named after libc's headers, so they stay
 * inside ovs_cls.c, which is compiled as C the way OVS compiles its own files.
 *
 * A classifier here is set up the way ovs-vswitchd sets up an OpenFlow table (ofproto.c's oftable_init):
 * staged lookup on OVS's flow segments and prefix tries on the IPv4 destination and source. Rules match
 * IPv4 five-tuples under masks and carry the index of the filter they came from; higher priorities win.
 * Rule memory is given back through OVS's RCU (ovsrcu_postpone), so freed memory waits for
 * ovs_cls_quiesce.
 *
 * Not thread-safe: one thread makes, changes, looks up in and destroys a classifier, and OVS's RCU sees a
 * single-threaded process (its postponed frees then run inside ovs_cls_quiesce). */
#ifndef DRSIM_BENCH_OVS_OVS_CLS_H_
#define DRSIM_BENCH_OVS_OVS_CLS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a rule matches, host order: a packet fits when each field, under its mask, equals the value (the
 * value's bits outside the mask are ignored; a zero mask matches anything). */
struct ovs_cls_match {
    uint32_t src, src_mask, dst, dst_mask;
    uint16_t sport, sport_mask, dport, dport_mask;
    uint8_t proto, proto_mask;
};

/* A packet's five fields, host order. */
struct ovs_cls_header {
    uint32_t src, dst;
    uint16_t sport, dport;
    uint8_t proto;
};

struct ovs_cls;
struct ovs_cls_packets;

/* An empty classifier. */
struct ovs_cls *ovs_cls_create(void);

/* Frees `cls` and its rules (after an ovs_cls_quiesce of its own). */
void ovs_cls_destroy(struct ovs_cls *cls);

/* Makes a rule (OVS's cls_rule_init) matching IPv4 packets under `match`, with `priority` (higher wins)
 * and `filter` (what lookups report for it), and inserts it (classifier_insert). Returns its index: rules
 * are numbered from 0 in the order they are added. */
size_t ovs_cls_add(struct ovs_cls *cls, const struct ovs_cls_match *match, int priority,
                   uint32_t filter);

/* Between ovs_cls_defer and ovs_cls_publish (classifier_defer, classifier_publish), changes are not
 * published to lookups one by one but together, as ofproto commits an OpenFlow bundle. */
void ovs_cls_defer(struct ovs_cls *cls);
void ovs_cls_publish(struct ovs_cls *cls);

/* How many rules were added, and how many subtables (distinct masks) the classifier holds now. */
size_t ovs_cls_rules(const struct ovs_cls *cls);
size_t ovs_cls_subtables(const struct ovs_cls *cls);

/* Takes rule `rule` out of the classifier (classifier_remove), keeping it for ovs_cls_restore; or puts a
 * removed rule back (classifier_insert). Each aborts on a rule in the wrong state. */
void ovs_cls_remove(struct ovs_cls *cls, size_t rule);
void ovs_cls_restore(struct ovs_cls *cls, size_t rule);

/* Runs the memory frees OVS's RCU has postponed (ovsrcu_quiesce): what ovs-vswitchd's main loop does once
 * a pass. */
void ovs_cls_quiesce(void);

/* `n` packets as OVS's struct flow (dl_type IPv4 and the five fields; everything else zero), made once so
 * lookups start from what OVS's flow extraction gives the classifier. */
struct ovs_cls_packets *ovs_cls_packets_create(const struct ovs_cls_header *headers, size_t n);
void ovs_cls_packets_destroy(struct ovs_cls_packets *packets);

/* Looks up packets [first, first + n) of `packets` (classifier_lookup, one at a time) and writes the
 * filter of the rule each hits, or -1, to filters[0..n). With `wildcards`, each lookup also computes the
 * megaflow wildcards (a struct flow_wildcards reset per packet), as ofproto-dpif's translation does for
 * every OpenFlow table; without, it passes NULL, as OVS's routing table does. */
void ovs_cls_lookup(const struct ovs_cls *cls, struct ovs_cls_packets *packets, size_t first, size_t n,
                    bool wildcards, int64_t *filters);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* DRSIM_BENCH_OVS_OVS_CLS_H_ */
