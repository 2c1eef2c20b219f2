"""Hash/checksum algorithms against their published check values (bmv2 uses the same ones)."""

from __future__ import annotations

from emulation.targets.embedded import calculations as calc


def test_crc16_is_crc16_arc() -> None:
    assert calc.crc16(b"123456789") == 0xBB3D


def test_crc32_standard_check_value() -> None:
    assert calc.crc32(b"123456789") == 0xCBF43926


def test_csum16_of_a_real_ipv4_header_is_its_checksum() -> None:
    hdr = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert calc.csum16(hdr) == 0xB861
    with_sum = hdr[:10] + (0xB861).to_bytes(2, "big") + hdr[12:]
    assert calc.csum16(with_sum) == 0


def test_csum16_odd_length_pads_with_zero() -> None:
    assert calc.csum16(b"\x01") == calc.csum16(b"\x01\x00")


def test_identity_and_xor16() -> None:
    assert calc.identity(b"\x01\x02\x03") == 0x010203
    assert calc.xor16(b"\x12\x34\x56\x78\x9a") == 0x1234 ^ 0x5678 ^ 0x9A00
