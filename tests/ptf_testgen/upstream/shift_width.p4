/* P4Testgen (p4c 1.2.5.16, 34b86e9bac) stops with an internal error on a shift whose amount
 * is narrower than the value shifted, when the amount is symbolic (here a table's action
 * parameter):
 *
 *   p4testgen --target bmv2 --arch v1model --test-backend STF --max-tests 0 --out-dir out \
 *       shift_width.p4
 *   P4Testgen Bug: shift_width.p4(..): Z3Translator: Z3 exception: Argument |...n...|
 *   at position 1 does not match declaration (declare-fun bvshl ((_ BitVec 64)
 *   (_ BitVec 64)) (_ BitVec 64))
 *
 * P4 allows the narrower unsigned amount, and p4c's bmv2 back end requires it (a shift
 * amount wider than 8 bits is refused on that target), so a v1model program cannot avoid
 * it.  Z3Translator::rewriteShift (backends/p4tools/common/core/z3_solver.cpp) widens only
 * infinite-precision amounts; zero-extending a narrower bit<w> amount to the left operand's
 * width fixes it (docs/switches.md, "P4Testgen"). inart.p4 has the same shift in its
 * bitmap check: hdr.ina.bitmap != (64w1 << meta.ina.rank).
 */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<64> mask; }
struct headers_t { h_t h; }
struct meta_t { bit<8> n; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control NoCheck(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_n(bit<8> n) { meta.n = n; }
    table t { key = { hdr.h.mask: exact; } actions = { set_n; NoAction; } }
    apply {
        t.apply();
        if (hdr.h.mask != (64w1 << meta.n)) { mark_to_drop(sm); }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), NoCheck(), I(), E(), NoCheck(), D()) main;
