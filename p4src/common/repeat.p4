/* inart: INA_REPEAT(M) expands M(0) M(1) ... M(INA_N - 1).
 *
 * P4-16 has no loops that every target unrolls, so the per-value code (payload fields, one
 * register array per value, the saturating adds) is written once as a macro and repeated
 * by the C preprocessor that p4c runs.  Supports 1 <= INA_N <= 64. */
#ifndef INART_REPEAT_P4
#define INART_REPEAT_P4

#include "constants.p4"

#if INA_N < 1 || INA_N > 64
#error "INA_N must be between 1 and 64"
#endif

#define INA_REP_1(M) M(0)
#define INA_REP_2(M) INA_REP_1(M) M(1)
#define INA_REP_3(M) INA_REP_2(M) M(2)
#define INA_REP_4(M) INA_REP_3(M) M(3)
#define INA_REP_5(M) INA_REP_4(M) M(4)
#define INA_REP_6(M) INA_REP_5(M) M(5)
#define INA_REP_7(M) INA_REP_6(M) M(6)
#define INA_REP_8(M) INA_REP_7(M) M(7)
#define INA_REP_9(M) INA_REP_8(M) M(8)
#define INA_REP_10(M) INA_REP_9(M) M(9)
#define INA_REP_11(M) INA_REP_10(M) M(10)
#define INA_REP_12(M) INA_REP_11(M) M(11)
#define INA_REP_13(M) INA_REP_12(M) M(12)
#define INA_REP_14(M) INA_REP_13(M) M(13)
#define INA_REP_15(M) INA_REP_14(M) M(14)
#define INA_REP_16(M) INA_REP_15(M) M(15)
#define INA_REP_17(M) INA_REP_16(M) M(16)
#define INA_REP_18(M) INA_REP_17(M) M(17)
#define INA_REP_19(M) INA_REP_18(M) M(18)
#define INA_REP_20(M) INA_REP_19(M) M(19)
#define INA_REP_21(M) INA_REP_20(M) M(20)
#define INA_REP_22(M) INA_REP_21(M) M(21)
#define INA_REP_23(M) INA_REP_22(M) M(22)
#define INA_REP_24(M) INA_REP_23(M) M(23)
#define INA_REP_25(M) INA_REP_24(M) M(24)
#define INA_REP_26(M) INA_REP_25(M) M(25)
#define INA_REP_27(M) INA_REP_26(M) M(26)
#define INA_REP_28(M) INA_REP_27(M) M(27)
#define INA_REP_29(M) INA_REP_28(M) M(28)
#define INA_REP_30(M) INA_REP_29(M) M(29)
#define INA_REP_31(M) INA_REP_30(M) M(30)
#define INA_REP_32(M) INA_REP_31(M) M(31)
#define INA_REP_33(M) INA_REP_32(M) M(32)
#define INA_REP_34(M) INA_REP_33(M) M(33)
#define INA_REP_35(M) INA_REP_34(M) M(34)
#define INA_REP_36(M) INA_REP_35(M) M(35)
#define INA_REP_37(M) INA_REP_36(M) M(36)
#define INA_REP_38(M) INA_REP_37(M) M(37)
#define INA_REP_39(M) INA_REP_38(M) M(38)
#define INA_REP_40(M) INA_REP_39(M) M(39)
#define INA_REP_41(M) INA_REP_40(M) M(40)
#define INA_REP_42(M) INA_REP_41(M) M(41)
#define INA_REP_43(M) INA_REP_42(M) M(42)
#define INA_REP_44(M) INA_REP_43(M) M(43)
#define INA_REP_45(M) INA_REP_44(M) M(44)
#define INA_REP_46(M) INA_REP_45(M) M(45)
#define INA_REP_47(M) INA_REP_46(M) M(46)
#define INA_REP_48(M) INA_REP_47(M) M(47)
#define INA_REP_49(M) INA_REP_48(M) M(48)
#define INA_REP_50(M) INA_REP_49(M) M(49)
#define INA_REP_51(M) INA_REP_50(M) M(50)
#define INA_REP_52(M) INA_REP_51(M) M(51)
#define INA_REP_53(M) INA_REP_52(M) M(52)
#define INA_REP_54(M) INA_REP_53(M) M(53)
#define INA_REP_55(M) INA_REP_54(M) M(54)
#define INA_REP_56(M) INA_REP_55(M) M(55)
#define INA_REP_57(M) INA_REP_56(M) M(56)
#define INA_REP_58(M) INA_REP_57(M) M(57)
#define INA_REP_59(M) INA_REP_58(M) M(58)
#define INA_REP_60(M) INA_REP_59(M) M(59)
#define INA_REP_61(M) INA_REP_60(M) M(60)
#define INA_REP_62(M) INA_REP_61(M) M(61)
#define INA_REP_63(M) INA_REP_62(M) M(62)
#define INA_REP_64(M) INA_REP_63(M) M(63)

#define INA_CAT_(a, b) a##b
#define INA_CAT(a, b) INA_CAT_(a, b)
#define INA_REPEAT(M) INA_CAT(INA_REP_, INA_N)(M)

#endif
