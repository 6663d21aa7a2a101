"""The universal Mach-O writer (mbsfmu.fmu.macho) against Apple's documented layout
(<mach-o/fat.h>), read back field by field with struct."""

from __future__ import annotations

import struct

import pytest

from mbsfmu.fmu.macho import ALIGN, FAT_MAGIC, MH_MAGIC_64, MachOError, fat_binary

X86_64, ARM64 = 0x01000007, 0x0100000C  # CPU_TYPE_X86_64, CPU_TYPE_ARM64 (<mach/machine.h>)


def fake_slice(cputype: int, cpusubtype: int, size: int) -> bytes:
    """A Mach-O header (magic, cputype, cpusubtype) padded with a recognisable byte."""
    head = struct.pack("<Iii", MH_MAGIC_64, cputype, cpusubtype)
    return head + bytes([cputype & 0xFF]) * (size - len(head))


def test_fat_header_and_aligned_slices(tmp_path):
    a, b = fake_slice(X86_64, 3, 5000), fake_slice(ARM64, 0, 7000)
    (tmp_path / "a").write_bytes(a)
    (tmp_path / "b").write_bytes(b)
    data = fat_binary([tmp_path / "a", tmp_path / "b"], tmp_path / "fat").read_bytes()
    magic, n = struct.unpack_from(">II", data, 0)
    assert (magic, n) == (FAT_MAGIC, 2)
    archs = [struct.unpack_from(">IIIII", data, 8 + 20 * k) for k in range(2)]
    assert [(c, s) for c, s, *_ in archs] == [(X86_64, 3), (ARM64, 0)]
    for (_c, _s, offset, size, align), sl in zip(archs, (a, b), strict=True):
        assert align == ALIGN and offset % (1 << ALIGN) == 0
        assert data[offset : offset + size] == sl
    assert archs[1][2] >= archs[0][2] + archs[0][3]  # no overlap
    assert len(data) == archs[1][2] + archs[1][3]


def test_refuses_what_is_not_one_slice_per_architecture(tmp_path):
    (tmp_path / "elf").write_bytes(b"\x7fELF" + bytes(60))
    (tmp_path / "a").write_bytes(fake_slice(X86_64, 3, 64))
    with pytest.raises(MachOError, match="elf: not a 64-bit little-endian Mach-O file"):
        fat_binary([tmp_path / "a", tmp_path / "elf"], tmp_path / "fat")
    with pytest.raises(MachOError, match="two slices of one architecture"):
        fat_binary([tmp_path / "a", tmp_path / "a"], tmp_path / "fat")
