"""The universal (fat) Mach-O binary of the native FMU's darwin64 folder: one file holding the
x86_64 and arm64 slices zig builds separately (zig has no lipo).

Format (Apple's <mach-o/fat.h>, the one lipo writes): a big-endian header ``fat_header {magic =
FAT_MAGIC 0xcafebabe, nfat_arch}``, then one ``fat_arch {cputype, cpusubtype, offset, size,
align}`` per slice (five big-endian uint32), then each slice at its offset, aligned to 2^align
bytes. Each slice's cputype and cpusubtype are read from its own 64-bit Mach-O header
(``mach_header_64 {magic = MH_MAGIC_64 0xfeedfacf, cputype, cpusubtype, ...}``, little-endian on
both architectures). ``align`` is 14 (16 KiB, arm64's page size; lipo's choice for arm64 and a
multiple of x86_64's 4 KiB pages).
"""

from __future__ import annotations

import struct
from pathlib import Path

FAT_MAGIC = 0xCAFEBABE
MH_MAGIC_64 = 0xFEEDFACF
ALIGN = 14  # log2 of the slices' alignment [bytes]


class MachOError(ValueError):
    """A slice is not a 64-bit little-endian Mach-O file."""


def slice_cpu(data: bytes, name: str) -> tuple[int, int]:
    """(cputype, cpusubtype) of a 64-bit Mach-O file's header; MachOError naming ``name`` else."""
    if len(data) < 12 or struct.unpack_from("<I", data, 0)[0] != MH_MAGIC_64:
        raise MachOError(f"{name}: not a 64-bit little-endian Mach-O file")
    cputype, cpusubtype = struct.unpack_from("<ii", data, 4)
    return cputype & 0xFFFFFFFF, cpusubtype & 0xFFFFFFFF


def fat_binary(slices: list[Path], output: Path) -> Path:
    """Write the universal binary ``output`` holding ``slices`` (Mach-O files of distinct
    architectures), in the given order. Returns ``output``."""
    datas = [Path(s).read_bytes() for s in slices]
    cpus = [slice_cpu(d, Path(s).name) for d, s in zip(datas, slices, strict=True)]
    if len({c for c, _ in cpus}) != len(cpus):
        raise MachOError(f"two slices of one architecture: {[Path(s).name for s in slices]}")
    step = 1 << ALIGN
    offset = 8 + 20 * len(datas)
    head = [struct.pack(">II", FAT_MAGIC, len(datas))]
    placed = []
    for (cputype, cpusubtype), data in zip(cpus, datas, strict=True):
        offset = -(-offset // step) * step  # round up to the alignment
        head.append(struct.pack(">IIIII", cputype, cpusubtype, offset, len(data), ALIGN))
        placed.append((offset, data))
        offset += len(data)
    out = bytearray(b"".join(head))
    for offset, data in placed:
        out += b"\0" * (offset - len(out)) + data
    Path(output).write_bytes(bytes(out))
    return Path(output)


__all__ = ["ALIGN", "FAT_MAGIC", "MH_MAGIC_64", "MachOError", "fat_binary", "slice_cpu"]
