/* inart: the INA switch program for Tofino 1 (TNA) with 64 values per packet.
 *
 * Same wire protocol, controller-facing tables, actions and counters as p4src/v1model/inart.p4
 * (DESIGN.md sections 3-4, names in p4src/README.md).  The layout follows Tofino 1's stateful
 * ALUs (SALUs): a register lives in one stage, is read-modified-written once per pass by its
 * SALU, and one SALU has two PHV inputs, two comparisons, four instructions (RegisterActions)
 * and ONE 32-bit output.  docs/tofino.md ("64 values per packet") has the design and budget.
 *
 * Values: a pair register per two values (slot_sum_k holds the sums of v_k and v_{k+32}), so
 * 32 SALUs add all 64 values in one pass.  A SALU outputs one word, so the packet that
 * completes a slot gets the sums of v0..v31 in its first pass and takes a SECOND pass (the
 * "harvest", through its pipe's recirculation port) that reads v32..v63, the union bitmap and
 * the overflow guard, frees the slot and sends the aggregate on.  Every other packet takes one
 * pass, except the first packet of a chunk on a slot, which is resubmitted once to claim it
 * (slot_tag's two comparisons cannot tell MATCH, free-or-older and newer apart in one
 * access), and a packet whose claim lost to another one, which goes round the recirculation
 * port once to try again as a MATCH (two first packets of one chunk).
 *
 * Expected stage map (ingress; egress only rewrites RESULT replicas and counts overflow_out):
 *   s0   ina_aggregate (job, PS, worker), bitmap_rank, the packet checks
 *   s1   slot_tag {round + 1, chunk}: MATCH / same round / other round (first pass), claim
 *        if free or older (claim pass), free (harvest); fan_in_class (fan-in -> guard class)
 *   s2   slot_bitmap_lo, slot_bitmap_hi (each returns old & mine: the duplicate test);
 *        guard_lo_a/_b, guard_hi_a/_b (a contribution's values outside the guard range)
 *   s3   slot_count, slot_guard_lo, slot_guard_hi, slot_sum_0
 *   s4+  slot_sum_1 .. slot_sum_31 (s4 .. s11: 32 SALUs for 31), routing, counters
 * (the design's map: the open-source back end needs 73 stages for this program and 14
 * without the guard; docs/tofino.md, "Trial compiles")
 *
 * Overflow: a pair SALU has one comparison per value, too few for the sticky saturation of
 * p4src/tna's earlier one-value-per-SALU layout, so overflow is detected from the inputs: a
 * slot whose fan-in is at most 2^c can only overflow if some contribution has a value outside
 * [-2^(31-c), 2^(31-c)); the guard tables test exactly that on every packet, the slot keeps a
 * sticky guard bit, and the harvest sets OVERFLOW on the aggregate when it is set.  The sums
 * still saturate (|+|).  So OVERFLOW is never missed; it can be set on an aggregate that did
 * not overflow (a value outside the guard range that the others offset), which costs the host
 * one resend of the chunk.
 */
#ifndef INA_N
#define INA_N 64
#endif
#if INA_N != 64
#error "this program pairs value k with value k + 32 (slot_sum_k): INA_N must be 64"
#endif

#include <core.p4>
#include <tna.p4>

#include "../common/constants.p4"
#include "../common/headers.p4"

/* What ingress decided to do with the packet. */
const bit<3> FATE_ROUTE = 0;
const bit<3> FATE_DROP = 1;
const bit<3> FATE_MULTICAST = 2;
const bit<3> FATE_RESUBMIT = 3;     /* first packet of a chunk: claim the slot in a second pass */
const bit<3> FATE_HARVEST = 4;      /* completed the slot: read the rest in a second pass */
const bit<3> FATE_RETRY = 5;        /* lost a claim: once more from the start */

/* SALU predicate outputs (this.predicate(cmplo, cmphi)): one bit per outcome, 0b0001 when
 * neither comparison holds. */
const bit<4> PRED_LO = 0b0010;      /* only the first */
const bit<4> PRED_HI = 0b0100;      /* only the second */
const bit<4> PRED_BOTH = 0b1000;

/* Tofino 1's recirculation port is pipe-local port 68 (dev ports 68, 196, 324, 452). */
const bit<7> RECIRC_PORT_LOCAL = 68;

const bit<8> EV_NONE = 0xff;

/* The claim pass of a resubmitted packet (Tofino 1: 64 bits). */
header resubmit_h {
    bit<8> claim;
    bit<56> pad;
}

/* In front of a packet sent round its pipe's recirculation port (egress bypassed): a
 * completing packet for its harvest (with the slot to read), or a packet whose claim lost. */
const bit<8> RECIRC_HARVEST = 1;
const bit<8> RECIRC_RETRY = 2;
header recirc_h {
    bit<8> kind;
    bit<32> idx;        /* all of meta.idx: a slice of it would pin both to one PHV container */
}

/* Ingress -> egress, in front of every packet that goes through egress. */
header bridge_h {
    bit<1> replica;     /* a RESULT to be replicated: egress rewrites it per egress_rid */
    bit<1> emitted;     /* this switch made the packet an aggregate (overflow_out counts it) */
    bit<6> pad;
}

struct ig_meta_t {
    resubmit_h resub;
    recirc_h recirc;
    bridge_h bridge;
    bit<3> fate;
    bit<8> ev;
    bit<8> ev2;
    bit<32> slot32;
    bit<32> idx;
    bit<16> room;
    bit<16> fan_in;
    bit<32> fan_in32;     /* the same, as the count SALU's operand */
    bit<8> rank;
    bit<32> agg_addr;
    bit<1> agg_hit;
    bit<1> bit_ok;
    bit<8> bit_rank;
    bit<6> guard_class;   /* bit d-1 set: the guard tests bit 31-d of every value */
    bit<32> guard_lo;     /* 1: one of v0..v31 is outside the guard range */
    bit<32> guard_hi;     /* 1: one of v32..v63 is */
    bit<4> guard_out_lo;  /* PRED_LO: the slot's guard bits were set */
    bit<4> guard_out_hi;
    bit<4> tag;
    bit<32> dup_lo;
    bit<32> dup_hi;
    bit<4> count_pred;
    bit<4> count_old;     /* PRED_LO: the claim replaced a slot with contributions pending */
    bit<8> flags_out;     /* an aggregate's flags but OVERFLOW: AGGREGATED set, RETX cleared */
}

struct eg_meta_t {
    bridge_h bridge;
}

struct pair32_t {
    bit<32> lo;
    bit<32> hi;
}

struct sum_pair_t {
    int<32> lo;
    int<32> hi;
}

/* M(k, k + 32) for the 32 pairs of values, in two halves of 16. */
#define INA_PAIRS_A(M)                                                                       \
    M(0, 32) M(1, 33) M(2, 34) M(3, 35) M(4, 36) M(5, 37) M(6, 38) M(7, 39)                  \
    M(8, 40) M(9, 41) M(10, 42) M(11, 43) M(12, 44) M(13, 45) M(14, 46) M(15, 47)
#define INA_PAIRS_B(M)                                                                       \
    M(16, 48) M(17, 49) M(18, 50) M(19, 51) M(20, 52) M(21, 53) M(22, 54) M(23, 55)          \
    M(24, 56) M(25, 57) M(26, 58) M(27, 59) M(28, 60) M(29, 61) M(30, 62) M(31, 63)
#define INA_PAIRS(M) INA_PAIRS_A(M) INA_PAIRS_B(M)

/* ------------------------------------------------------------------------------------------
 * Ingress parser */

parser InaIngressParser(packet_in pkt, out headers_t hdr, out ig_meta_t meta,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        meta.resub.setInvalid();
        meta.recirc.setInvalid();
        /* constants set here cost no pipeline stage */
        meta.fate = FATE_ROUTE;
        meta.ev = EV_NONE;
        meta.ev2 = EV_NONE;
        meta.bit_ok = 0;
        meta.agg_hit = 0;
        meta.fan_in = 0;
        meta.guard_class = 0;
        meta.guard_lo = 0;
        meta.guard_hi = 0;
        meta.guard_out_lo = 0;
        meta.guard_out_hi = 0;
        transition select(ig_intr_md.resubmit_flag) {
            1: parse_resubmit;
            default: parse_port_metadata;
        }
    }
    state parse_resubmit {
        pkt.extract(meta.resub);
        transition parse_ethernet;
    }
    state parse_port_metadata {
        pkt.advance(PORT_METADATA_SIZE);
        transition select(ig_intr_md.ingress_port[6:0]) {
            RECIRC_PORT_LOCAL: parse_recirc;
            default: parse_ethernet;
        }
    }
    state parse_recirc {
        pkt.extract(meta.recirc);
        meta.idx = meta.recirc.idx;  /* a retry's is computed again from the table */
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (4w5, 13w0, IPPROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            INA_GRAD_PORT: parse_ina;
            INA_RESULT_PORT: parse_ina;
            default: accept;
        }
    }
    state parse_ina {
        pkt.extract(hdr.ina);
        pkt.extract(hdr.vals);
        meta.slot32 = 16w0 ++ hdr.ina.slot;  /* the 32-bit operand of pool_base + slot */
        transition accept;
    }
}

/* ------------------------------------------------------------------------------------------
 * Ingress: routing, the slot state machine, RESULT multicast */

/* The sums of v_k (lo) and v_j = v_{k+32} (hi) of every slot: store (claim), saturating add
 * returning the new sum of v_k (every contribution; the completing one writes it into v_k),
 * read the sum of v_j (harvest). */
#define INA_SUM_PAIR(k, j)                                                                   \
    Register<sum_pair_t, bit<12>>(INA_SLOTS) slot_sum_##k;                                   \
    RegisterAction<sum_pair_t, bit<12>, int<32>>(slot_sum_##k) sum_store_##k = {             \
        void apply(inout sum_pair_t value) {                                                 \
            value.lo = hdr.vals.v##k;                                                        \
            value.hi = hdr.vals.v##j;                                                        \
        }                                                                                    \
    };                                                                                       \
    RegisterAction<sum_pair_t, bit<12>, int<32>>(slot_sum_##k) sum_add_##k = {               \
        void apply(inout sum_pair_t value, out int<32> rv) {                                 \
            value.lo = value.lo |+| hdr.vals.v##k;                                           \
            value.hi = value.hi |+| hdr.vals.v##j;                                           \
            rv = value.lo;                                                                   \
        }                                                                                    \
    };                                                                                       \
    RegisterAction<sum_pair_t, bit<12>, int<32>>(slot_sum_##k) sum_read_hi_##k = {           \
        void apply(inout sum_pair_t value, out int<32> rv) { rv = value.hi; }                \
    };
#define INA_SUM_STORE(k, j) sum_store_##k.execute(meta.idx[11:0]);
#define INA_SUM_ADD(k, j) hdr.vals.v##k = sum_add_##k.execute(meta.idx[11:0]);
#define INA_SUM_READ_HI(k, j) hdr.vals.v##j = sum_read_hi_##k.execute(meta.idx[11:0]);

/* The overflow guard.  A value v is in the guard range of class c (fan-in <= 2^c) when bits
 * 31 .. 31-c of v are equal, i.e. -2^(31-c) <= v < 2^(31-c); fan-in such values cannot
 * overflow an int32 sum.  One ternary entry per (value, bit 31-d, sign): guard_class bit d-1
 * set (d <= c), bit 31 of the value = sign, bit 31-d != sign.  The key holds bits 31..25 of
 * each value (c <= 6: fan-in <= 64, the bitmap's limit). */
#define INA_GUARD_KEY(k, j) hdr.vals.v##k[31:25]: ternary @name(#k);
#define INA_GUARD_KEY_HI(k, j) hdr.vals.v##j[31:25]: ternary @name(#j);
/* wildcards before (W) and after (T) the key column of one value */
#define INA_GW0
#define INA_GW1 _,
#define INA_GW2 INA_GW1 _,
#define INA_GW3 INA_GW2 _,
#define INA_GW4 INA_GW3 _,
#define INA_GW5 INA_GW4 _,
#define INA_GW6 INA_GW5 _,
#define INA_GW7 INA_GW6 _,
#define INA_GW8 INA_GW7 _,
#define INA_GW9 INA_GW8 _,
#define INA_GW10 INA_GW9 _,
#define INA_GW11 INA_GW10 _,
#define INA_GW12 INA_GW11 _,
#define INA_GW13 INA_GW12 _,
#define INA_GW14 INA_GW13 _,
#define INA_GW15 INA_GW14 _,
#define INA_GW16 INA_GW15 _,
#define INA_GW17 INA_GW16 _,
#define INA_GW18 INA_GW17 _,
#define INA_GW19 INA_GW18 _,
#define INA_GW20 INA_GW19 _,
#define INA_GW21 INA_GW20 _,
#define INA_GW22 INA_GW21 _,
#define INA_GW23 INA_GW22 _,
#define INA_GW24 INA_GW23 _,
#define INA_GW25 INA_GW24 _,
#define INA_GW26 INA_GW25 _,
#define INA_GW27 INA_GW26 _,
#define INA_GW28 INA_GW27 _,
#define INA_GW29 INA_GW28 _,
#define INA_GW30 INA_GW29 _,
#define INA_GW31 INA_GW30 _,
#define INA_GT0
#define INA_GT1 , _
#define INA_GT2 INA_GT1 , _
#define INA_GT3 INA_GT2 , _
#define INA_GT4 INA_GT3 , _
#define INA_GT5 INA_GT4 , _
#define INA_GT6 INA_GT5 , _
#define INA_GT7 INA_GT6 , _
#define INA_GT8 INA_GT7 , _
#define INA_GT9 INA_GT8 , _
#define INA_GT10 INA_GT9 , _
#define INA_GT11 INA_GT10 , _
#define INA_GT12 INA_GT11 , _
#define INA_GT13 INA_GT12 , _
#define INA_GT14 INA_GT13 , _
#define INA_GT15 INA_GT14 , _
#define INA_GT16 INA_GT15 , _
#define INA_GT17 INA_GT16 , _
#define INA_GT18 INA_GT17 , _
#define INA_GT19 INA_GT18 , _
#define INA_GT20 INA_GT19 , _
#define INA_GT21 INA_GT20 , _
#define INA_GT22 INA_GT21 , _
#define INA_GT23 INA_GT22 , _
#define INA_GT24 INA_GT23 , _
#define INA_GT25 INA_GT24 , _
#define INA_GT26 INA_GT25 , _
#define INA_GT27 INA_GT26 , _
#define INA_GT28 INA_GT27 , _
#define INA_GT29 INA_GT28 , _
#define INA_GT30 INA_GT29 , _
#define INA_GT31 INA_GT30 , _
/* the 12 entries of the value in column i (i wildcards before it, t after it) */
#define INA_GUARD_ENTRIES_(W, T, A)                                                          \
    (6w0x01 &&& 6w0x01, W 7w0x20 &&& 7w0x60 T): A(); (6w0x01 &&& 6w0x01, W 7w0x40 &&& 7w0x60 T): A(); \
    (6w0x02 &&& 6w0x02, W 7w0x10 &&& 7w0x50 T): A(); (6w0x02 &&& 6w0x02, W 7w0x40 &&& 7w0x50 T): A(); \
    (6w0x04 &&& 6w0x04, W 7w0x08 &&& 7w0x48 T): A(); (6w0x04 &&& 6w0x04, W 7w0x40 &&& 7w0x48 T): A(); \
    (6w0x08 &&& 6w0x08, W 7w0x04 &&& 7w0x44 T): A(); (6w0x08 &&& 6w0x08, W 7w0x40 &&& 7w0x44 T): A(); \
    (6w0x10 &&& 6w0x10, W 7w0x02 &&& 7w0x42 T): A(); (6w0x10 &&& 6w0x10, W 7w0x40 &&& 7w0x42 T): A(); \
    (6w0x20 &&& 6w0x20, W 7w0x01 &&& 7w0x41 T): A(); (6w0x20 &&& 6w0x20, W 7w0x40 &&& 7w0x41 T): A();
#define INA_GUARD_ENTRIES(i, t, A) INA_GUARD_ENTRIES_(INA_GW##i, INA_GT##t, A)
/* the entries of a table keyed on 16 values: 12 per value column */
#define INA_GUARD_COLUMNS(A)                                                                 \
    INA_GUARD_ENTRIES(0, 15, A) INA_GUARD_ENTRIES(1, 14, A) INA_GUARD_ENTRIES(2, 13, A)      \
    INA_GUARD_ENTRIES(3, 12, A) INA_GUARD_ENTRIES(4, 11, A) INA_GUARD_ENTRIES(5, 10, A)      \
    INA_GUARD_ENTRIES(6, 9, A) INA_GUARD_ENTRIES(7, 8, A) INA_GUARD_ENTRIES(8, 7, A)         \
    INA_GUARD_ENTRIES(9, 6, A) INA_GUARD_ENTRIES(10, 5, A) INA_GUARD_ENTRIES(11, 4, A)       \
    INA_GUARD_ENTRIES(12, 3, A) INA_GUARD_ENTRIES(13, 2, A) INA_GUARD_ENTRIES(14, 1, A)      \
    INA_GUARD_ENTRIES(15, 0, A)

control InaIngress(inout headers_t hdr, inout ig_meta_t meta,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    /* The packet's INA event (DESIGN.md 4) and, for the few packets with two, the second
     * one (stale_reclaimed beside absorbed_drop, no_route_drop after a forward decision):
     * Tofino counts a counter once per packet, so each gets its own; readers sum them. */
    Counter<bit<64>, bit<8>>(EV_COUNT, CounterType_t.PACKETS_AND_BYTES) events;
    Counter<bit<64>, bit<8>>(EV_COUNT, CounterType_t.PACKETS_AND_BYTES) more_events;

    /* ---- slot state ---- */

    /* (round + 1, chunk) of the slot's aggregation; round word 0 = free (harvested), so
     * "free or older" is one comparison (round word <= round).  check: PRED_BOTH = MATCH,
     * PRED_LO = same round, another chunk (busy), else another round or free. */
    Register<pair32_t, bit<12>>(INA_SLOTS, {0, 0}) slot_tag;
    RegisterAction<pair32_t, bit<12>, bit<4>>(slot_tag) tag_check = {
        void apply(inout pair32_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == hdr.ina.round + 1, value.hi == hdr.ina.chunk);
        }
    };
    /* Claim pass: take the slot if it is free or holds an older round (PRED_LO: taken). */
    RegisterAction<pair32_t, bit<12>, bit<4>>(slot_tag) tag_claim = {
        void apply(inout pair32_t value, out bit<4> rv) {
            rv = this.predicate(value.lo <= hdr.ina.round);
            if (value.lo <= hdr.ina.round) {
                value.lo = hdr.ina.round + 1;
                value.hi = hdr.ina.chunk;
            }
        }
    };
    /* Harvest pass: free the slot if it still holds this chunk (PRED_BOTH: it did). */
    RegisterAction<pair32_t, bit<12>, bit<4>>(slot_tag) tag_free = {
        void apply(inout pair32_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == hdr.ina.round + 1, value.hi == hdr.ina.chunk);
            if (value.lo == hdr.ina.round + 1 && value.hi == hdr.ina.chunk) {
                value.lo = 0;
            }
        }
    };

    /* The 64-bit contributor bitmap as two words; or_dup returns old & mine (the duplicate
     * test, computed by the SALU's spare ALU) and read returns the union for the harvest. */
    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_bitmap_lo;
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_lo) bitmap_lo_set = {
        void apply(inout bit<32> value) { value = hdr.ina.bitmap[31:0]; }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_lo) bitmap_lo_or_dup = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value & hdr.ina.bitmap[31:0];
            value = value | hdr.ina.bitmap[31:0];
        }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_lo) bitmap_lo_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_bitmap_hi;
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_hi) bitmap_hi_set = {
        void apply(inout bit<32> value) { value = hdr.ina.bitmap[63:32]; }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_hi) bitmap_hi_or_dup = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value & hdr.ina.bitmap[63:32];
            value = value | hdr.ina.bitmap[63:32];
        }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_hi) bitmap_hi_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };

    /* Contributions so far (0: none pending).  add: PRED_LO = this one completes the slot,
     * PRED_HI = nothing pending (not for a consistent slot: once it completes, the bitmap
     * holds every contributor, so a packet of that chunk is a duplicate), neither =
     * absorbed.  The sums do not wait for this answer (a stray add on a slot with nothing
     * pending is overwritten by the next claim), so they can share its stage. */
    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_count;
    /* claim: PRED_LO when it replaces pending contributions (a stale aggregation) */
    RegisterAction<bit<32>, bit<12>, bit<4>>(slot_count) count_claim = {
        void apply(inout bit<32> value, out bit<4> rv) {
            rv = this.predicate(value != 0);
            value = 1;
        }
    };
    RegisterAction<bit<32>, bit<12>, bit<4>>(slot_count) count_add = {
        void apply(inout bit<32> value, out bit<4> rv) {
            rv = this.predicate(value + 1 == meta.fan_in32, value == 0);
            if (value + 1 == meta.fan_in32) {
                value = 0;
            } else if (value != 0) {
                value = value + 1;
            }
        }
    };

    /* Sticky guard bits of the slot's contributions (v0..v31, v32..v63): OR on claim and
     * add, tested (PRED_LO: set) and cleared by the harvest. */
    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_guard_lo;
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_guard_lo) guard_lo_or = {
        void apply(inout bit<32> value) { value = value | meta.guard_lo; }
    };
    RegisterAction<bit<32>, bit<12>, bit<4>>(slot_guard_lo) guard_lo_take = {
        void apply(inout bit<32> value, out bit<4> rv) {
            rv = this.predicate(value != 0);
            value = 0;
        }
    };
    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_guard_hi;
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_guard_hi) guard_hi_or = {
        void apply(inout bit<32> value) { value = value | meta.guard_hi; }
    };
    RegisterAction<bit<32>, bit<12>, bit<4>>(slot_guard_hi) guard_hi_take = {
        void apply(inout bit<32> value, out bit<4> rv) {
            rv = this.predicate(value != 0);
            value = 0;
        }
    };

    INA_PAIRS(INA_SUM_PAIR)

    action drop_event(bit<8> ev) {
        meta.ev = ev;
        meta.fate = FATE_DROP;
    }

    /* ---- routing: (src, dst) exact first, then dst longest-prefix ---- */
    action set_next_hop(PortId_t port, bit<48> dst_mac, bit<48> src_mac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ethernet.src_addr = src_mac;
    }
    action drop_no_route() {
        meta.ev2 = EV_NO_ROUTE_DROP;
        meta.fate = FATE_DROP;
    }
    table route_pair {
        key = {
            hdr.ipv4.src_addr: exact @name("src_addr");
            hdr.ipv4.dst_addr: exact @name("dst_addr");
        }
        actions = { set_next_hop; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 16384;
    }
    table route_dst {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { set_next_hop; @defaultonly drop_no_route; }
        const default_action = drop_no_route();
        size = 4096;
    }

    /* ---- aggregation: one entry per (job, PS, worker) this switch aggregates ---- */
    /* One operation per field and at most one action-data operand in each (two, such as
     * fan_in - 1, would cost a stage before this table: bf-p4c's $precompute). */
    action aggregate(bit<32> pool_base, bit<16> pool_size, bit<16> fan_in, bit<8> rank,
                     bit<32> agg_addr) {
        meta.idx = pool_base + meta.slot32;
        meta.room = pool_size |-| hdr.ina.slot;
        meta.fan_in = fan_in;
        meta.fan_in32 = (bit<32>)fan_in;
        meta.rank = rank;
        meta.agg_addr = agg_addr;
        meta.agg_hit = 1;
    }
    table ina_aggregate {
        key = {
            hdr.ina.job: exact @name("job");
            hdr.ipv4.dst_addr: exact @name("ps_addr");
            hdr.ipv4.src_addr: exact @name("worker_addr");
        }
        actions = { aggregate; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 16384;
    }

    /* The rank whose bit the packet's bitmap is (one bit set), for the spoofing check. */
    action bit_rank(bit<8> rank) {
        meta.bit_ok = 1;
        meta.bit_rank = rank;
    }
#define INA_RANK_ENTRY(r) 64w1 << r : bit_rank(r);
    table bitmap_rank {
        key = { hdr.ina.bitmap: exact; }
        actions = { bit_rank; @defaultonly NoAction; }
        const default_action = NoAction();
        const entries = {
            INA_RANK_ENTRY(0) INA_RANK_ENTRY(1) INA_RANK_ENTRY(2) INA_RANK_ENTRY(3)
            INA_RANK_ENTRY(4) INA_RANK_ENTRY(5) INA_RANK_ENTRY(6) INA_RANK_ENTRY(7)
            INA_RANK_ENTRY(8) INA_RANK_ENTRY(9) INA_RANK_ENTRY(10) INA_RANK_ENTRY(11)
            INA_RANK_ENTRY(12) INA_RANK_ENTRY(13) INA_RANK_ENTRY(14) INA_RANK_ENTRY(15)
            INA_RANK_ENTRY(16) INA_RANK_ENTRY(17) INA_RANK_ENTRY(18) INA_RANK_ENTRY(19)
            INA_RANK_ENTRY(20) INA_RANK_ENTRY(21) INA_RANK_ENTRY(22) INA_RANK_ENTRY(23)
            INA_RANK_ENTRY(24) INA_RANK_ENTRY(25) INA_RANK_ENTRY(26) INA_RANK_ENTRY(27)
            INA_RANK_ENTRY(28) INA_RANK_ENTRY(29) INA_RANK_ENTRY(30) INA_RANK_ENTRY(31)
            INA_RANK_ENTRY(32) INA_RANK_ENTRY(33) INA_RANK_ENTRY(34) INA_RANK_ENTRY(35)
            INA_RANK_ENTRY(36) INA_RANK_ENTRY(37) INA_RANK_ENTRY(38) INA_RANK_ENTRY(39)
            INA_RANK_ENTRY(40) INA_RANK_ENTRY(41) INA_RANK_ENTRY(42) INA_RANK_ENTRY(43)
            INA_RANK_ENTRY(44) INA_RANK_ENTRY(45) INA_RANK_ENTRY(46) INA_RANK_ENTRY(47)
            INA_RANK_ENTRY(48) INA_RANK_ENTRY(49) INA_RANK_ENTRY(50) INA_RANK_ENTRY(51)
            INA_RANK_ENTRY(52) INA_RANK_ENTRY(53) INA_RANK_ENTRY(54) INA_RANK_ENTRY(55)
            INA_RANK_ENTRY(56) INA_RANK_ENTRY(57) INA_RANK_ENTRY(58) INA_RANK_ENTRY(59)
            INA_RANK_ENTRY(60) INA_RANK_ENTRY(61) INA_RANK_ENTRY(62) INA_RANK_ENTRY(63)
        }
    }

    /* ---- the overflow guard (see the top of this file) ---- */
    action set_guard_class(bit<6> guard_class) {
        meta.guard_class = guard_class;
    }
    /* fan-in -> class c = ceil(log2(fan-in)) as a thermometer code (bits 0 .. c-1 set);
     * fan-in 0 or 1 adds nothing, class 0.  Fan-in above 64 (more than the bitmap's workers)
     * gets the strictest class. */
    table fan_in_class {
        key = { meta.fan_in: range @name("fan_in"); }
        actions = { set_guard_class; @defaultonly NoAction; }
        const default_action = NoAction();
        const entries = {
            2 .. 2: set_guard_class(0x01);
            3 .. 4: set_guard_class(0x03);
            5 .. 8: set_guard_class(0x07);
            9 .. 16: set_guard_class(0x0f);
            17 .. 32: set_guard_class(0x1f);
            33 .. 0xffff: set_guard_class(0x3f);
        }
    }
    /* Four tables of 16 values each: one of 32 7-bit keys (33 bytes) does not fit a table's
     * ternary input crossbar.  Each sets its own bit of the word the slot's guard ORs in. */
    action guard_hit_lo_a() {
        meta.guard_lo[0:0] = 1;
    }
    action guard_hit_lo_b() {
        meta.guard_lo[16:16] = 1;
    }
    action guard_hit_hi_a() {
        meta.guard_hi[0:0] = 1;
    }
    action guard_hit_hi_b() {
        meta.guard_hi[16:16] = 1;
    }
#define INA_GUARD_TABLE(table_name, PAIRS, KEY, hit)                                               \
    table table_name {                                                                       \
        key = {                                                                              \
            meta.guard_class: ternary @name("class");                                        \
            PAIRS(KEY)                                                                       \
        }                                                                                    \
        actions = { hit; @defaultonly NoAction; }                                            \
        const default_action = NoAction();                                                   \
        size = 192;                                                                          \
        const entries = { INA_GUARD_COLUMNS(hit) }                                           \
    }
    INA_GUARD_TABLE(guard_lo_a, INA_PAIRS_A, INA_GUARD_KEY, guard_hit_lo_a)
    INA_GUARD_TABLE(guard_lo_b, INA_PAIRS_B, INA_GUARD_KEY, guard_hit_lo_b)
    INA_GUARD_TABLE(guard_hi_a, INA_PAIRS_A, INA_GUARD_KEY_HI, guard_hit_hi_a)
    INA_GUARD_TABLE(guard_hi_b, INA_PAIRS_B, INA_GUARD_KEY_HI, guard_hit_hi_b)

    /* Turn the packet into the ONE aggregate sent on to the PS (its values are the sums
     * after the harvest pass; OVERFLOW is added there). */
    action emit_aggregate() {
        hdr.ina.count = meta.fan_in;
        hdr.ina.flags = meta.flags_out;
        hdr.ipv4.src_addr = meta.agg_addr;
    }

    /* ---- RESULT multicast: the PS's RESULT to the job's result address is replicated ---- */
    action multicast(MulticastGroupId_t group) {
        ig_tm_md.mcast_grp_a = group;
        meta.fate = FATE_MULTICAST;
        meta.ev = EV_RESULT_MULTICAST;
        meta.bridge.replica = 1;
    }
    table result_multicast {
        key = {
            hdr.ina.job: exact @name("job");
            hdr.ipv4.src_addr: exact @name("ps_addr");
            hdr.ipv4.dst_addr: exact @name("dst_addr");
        }
        actions = { multicast; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 4096;
    }

    apply {
        /* the lookups first and unconditionally: every check below can then be a gateway
         * in the same stages as the slot registers */
        if (!meta.recirc.isValid() || meta.recirc.kind != RECIRC_HARVEST) {
            ina_aggregate.apply();
        }
        bitmap_rank.apply();
        fan_in_class.apply();
        guard_lo_a.apply();
        guard_lo_b.apply();
        guard_hi_a.apply();
        guard_hi_b.apply();
        meta.bridge.setValid();
        meta.bridge.replica = 0;
        meta.bridge.emitted = 0;
        meta.bridge.pad = 0;
        /* bits 2..0 are OVERFLOW, AGGREGATED, RETX (one deposit, not two ALU steps) */
        meta.flags_out = hdr.ina.flags[7:3] ++ INA_FLAG_AGGREGATED[2:0];
        if (!hdr.ipv4.isValid()) {
            drop_event(EV_NOT_IPV4_DROP);
        } else if (ig_prsr_md.parser_err != 0) {
            drop_event(EV_MALFORMED_DROP);
        } else if (hdr.ina.isValid() && hdr.udp.length != INA_UDP_LENGTH) {
            drop_event(EV_MALFORMED_DROP);
        } else if (meta.recirc.isValid() && meta.recirc.kind == RECIRC_HARVEST) {
            /* second pass of the completing packet: v0..v31 hold their sums already */
            meta.tag = tag_free.execute(meta.idx[11:0]);
            hdr.ina.bitmap[31:0] = bitmap_lo_read.execute(meta.idx[11:0]);
            hdr.ina.bitmap[63:32] = bitmap_hi_read.execute(meta.idx[11:0]);
            INA_PAIRS(INA_SUM_READ_HI)
            if (meta.tag == PRED_BOTH) {
                meta.guard_out_lo = guard_lo_take.execute(meta.idx[11:0]);
                meta.guard_out_hi = guard_hi_take.execute(meta.idx[11:0]);
            } else {
                /* another round took the slot between the two passes (a packet of a past
                 * round completed it late): its sums are not this chunk's to vouch for */
                meta.guard_out_lo = PRED_LO;
            }
            if (meta.guard_out_lo == PRED_LO) {
                hdr.ina.flags = hdr.ina.flags | INA_FLAG_OVERFLOW;
            } else if (meta.guard_out_hi == PRED_LO) {
                hdr.ina.flags = hdr.ina.flags | INA_FLAG_OVERFLOW;
            }
            meta.ev = EV_AGGREGATED_OUT;
            meta.bridge.emitted = 1;
        } else if (hdr.ipv4.ttl <= 1) {
            drop_event(EV_TTL_EXPIRED_DROP);
        } else if (hdr.ina.isValid()) {
            hdr.udp.checksum = 0;
            if (hdr.ina.pkt_type == INA_TYPE_GRAD) {
                if (hdr.ina.flags[0:0] == INA_FLAG_RETX[0:0]
                        || hdr.ina.flags[2:2] == INA_FLAG_OVERFLOW[2:2]) {
                    /* RETX; or a GRAD already flagged OVERFLOW, which goes to the PS as is */
                    meta.ev = EV_RETX_BYPASS;
                } else if (meta.agg_hit == 1) {
                    if (meta.bit_ok == 0 || meta.bit_rank != meta.rank) {
                        drop_event(EV_SPOOFED_BITMAP_DROP);
                    } else if (meta.room == 0 || meta.idx[31:12] != 0) {
                        meta.ev = EV_SLOT_OUT_OF_POOL;
                    } else if (meta.fan_in <= 1) {
                        /* the packet is the aggregate (a duplicate is sent again, as the
                         * v1model program claims its freed slot again; the PS drops it) */
                        emit_aggregate();
                        meta.ev = EV_AGGREGATED_OUT;
                        meta.bridge.emitted = 1;
                    } else if (meta.resub.isValid()) {
                        /* claim pass */
                        meta.tag = tag_claim.execute(meta.idx[11:0]);
                        if (meta.tag == PRED_LO) {
                            bitmap_lo_set.execute(meta.idx[11:0]);
                            bitmap_hi_set.execute(meta.idx[11:0]);
                            meta.count_old = count_claim.execute(meta.idx[11:0]);
                            guard_lo_or.execute(meta.idx[11:0]);
                            guard_hi_or.execute(meta.idx[11:0]);
                            INA_PAIRS(INA_SUM_STORE)
                            drop_event(EV_ABSORBED_DROP);
                            if (meta.count_old == PRED_LO) {
                                meta.ev2 = EV_STALE_RECLAIMED;
                            }
                        } else {
                            /* taken meanwhile (maybe by this chunk) or a newer round's */
                            meta.fate = FATE_RETRY;
                        }
                    } else {
                        meta.tag = tag_check.execute(meta.idx[11:0]);
                        if (meta.tag == PRED_BOTH) {
                            meta.dup_lo = bitmap_lo_or_dup.execute(meta.idx[11:0]);
                            meta.dup_hi = bitmap_hi_or_dup.execute(meta.idx[11:0]);
                            /* one word per condition: a gateway reads 4 bytes at most */
                            if (meta.dup_lo != 0) {
                                drop_event(EV_DUPLICATE_DROP);
                            } else if (meta.dup_hi != 0) {
                                drop_event(EV_DUPLICATE_DROP);
                            } else {
                                meta.count_pred = count_add.execute(meta.idx[11:0]);
                                guard_lo_or.execute(meta.idx[11:0]);
                                guard_hi_or.execute(meta.idx[11:0]);
                                INA_PAIRS(INA_SUM_ADD)
                                if (meta.count_pred == PRED_LO) {
                                    emit_aggregate();
                                    meta.fate = FATE_HARVEST;
                                } else if (meta.count_pred == PRED_HI) {
                                    meta.ev = EV_COLLISION;
                                } else {
                                    drop_event(EV_ABSORBED_DROP);
                                }
                            }
                        } else if (meta.tag == PRED_LO || meta.recirc.isValid()) {
                            /* same round, another chunk; or a retry that found another
                             * round again: forwarded unaggregated */
                            meta.ev = EV_COLLISION;
                        } else {
                            /* free, or another round's: decide in a claim pass */
                            meta.fate = FATE_RESUBMIT;
                        }
                    }
                }
            } else if (hdr.ina.pkt_type == INA_TYPE_RESULT) {
                result_multicast.apply();
            }
        }
        /* one chain over the fate: its branches exclude each other by structure, so the
         * back end may place them in one stage (the port written by routing and by the
         * recirculation is no write-after-write conflict) */
        if (meta.fate == FATE_ROUTE) {
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
            meta.recirc.setInvalid();
            if (!route_pair.apply().hit) {
                route_dst.apply();
            }
        } else if (meta.fate == FATE_MULTICAST) {
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
            meta.recirc.setInvalid();
        } else if (meta.fate == FATE_DROP) {
            ig_dprsr_md.drop_ctl = 1;
            meta.recirc.setInvalid();
        } else if (meta.fate == FATE_RESUBMIT) {
            ig_dprsr_md.resubmit_type = 1;
            meta.resub.setValid();
            meta.resub.claim = 1;
            meta.resub.pad = 0;
            meta.recirc.setInvalid();
        } else if (meta.fate == FATE_HARVEST) {
            /* round this pipe's recirculation port, egress bypassed: the recirculation header
             * goes first and the bridge header not at all */
            ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port[8:7] ++ RECIRC_PORT_LOCAL;
            ig_tm_md.bypass_egress = 1;
            meta.recirc.setValid();
            meta.recirc.kind = RECIRC_HARVEST;
            meta.recirc.idx = meta.idx;
            meta.bridge.setInvalid();
        } else if (meta.fate == FATE_RETRY) {
            ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port[8:7] ++ RECIRC_PORT_LOCAL;
            ig_tm_md.bypass_egress = 1;
            meta.recirc.setValid();
            meta.recirc.kind = RECIRC_RETRY;
            meta.recirc.idx = meta.idx;
            meta.bridge.setInvalid();
        } else {
            meta.recirc.setInvalid();
        }
        if (meta.ev != EV_NONE) {
            events.count(meta.ev);
        }
        if (meta.ev2 != EV_NONE) {
            more_events.count(meta.ev2);
        }
    }
}

control InaIngressDeparser(packet_out pkt, inout headers_t hdr, in ig_meta_t meta,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Resubmit() resubmit;
    apply {
        if (ig_dprsr_md.resubmit_type == 1) {
            resubmit.emit(meta.resub);
        }
        pkt.emit(meta.recirc);
        pkt.emit(meta.bridge);
        pkt.emit(hdr);
    }
}

/* ------------------------------------------------------------------------------------------
 * Egress: per-replica RESULT rewrite, overflow_out, IPv4 checksum.  The values are not
 * parsed here: egress never reads them, and they leave as the payload behind the INA header. */

parser InaEgressParser(packet_in pkt, out headers_t hdr, out eg_meta_t meta,
                       out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(meta.bridge);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (4w5, 13w0, IPPROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            INA_GRAD_PORT: parse_ina;
            INA_RESULT_PORT: parse_ina;
            default: accept;
        }
    }
    state parse_ina {
        pkt.extract(hdr.ina);
        transition accept;
    }
}

control InaEgress(inout headers_t hdr, inout eg_meta_t meta,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    /* RESULT replicas whose egress_rid has no result_rewrite entry (a controller error). */
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS_AND_BYTES) replica_drops;
    /* overflow_out (same index map as InaIngress.events), counted where the aggregate
     * leaves, as in the one-pass layout. */
    Counter<bit<64>, bit<8>>(EV_COUNT, CounterType_t.PACKETS_AND_BYTES) events;

    /* Each PRE replica (egress_rid) becomes a unicast RESULT to one worker. */
    action rewrite_result(bit<32> dst_addr, bit<48> dst_mac, bit<48> src_mac) {
        hdr.ipv4.dst_addr = dst_addr;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ethernet.src_addr = src_mac;
    }
    action drop_unknown_replica() {
        replica_drops.count(0);
        eg_dprsr_md.drop_ctl = 1;
    }
    table result_rewrite {
        key = { eg_intr_md.egress_rid: exact @name("egress_rid"); }
        actions = { rewrite_result; @defaultonly drop_unknown_replica; }
        const default_action = drop_unknown_replica();
        size = 16384;
    }
    apply {
        if (meta.bridge.replica == 1) {
            result_rewrite.apply();
        }
        if (meta.bridge.emitted == 1 && (hdr.ina.flags & INA_FLAG_OVERFLOW) != 0) {
            events.count(EV_OVERFLOW_OUT);
        }
    }
}

control InaEgressDeparser(packet_out pkt, inout headers_t hdr, in eg_meta_t meta,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;
    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
                hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        pkt.emit(hdr);
    }
}

Pipeline(InaIngressParser(), InaIngress(), InaIngressDeparser(),
         InaEgressParser(), InaEgress(), InaEgressDeparser()) pipe;

Switch(pipe) main;
