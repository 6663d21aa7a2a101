"""XML with line numbers: the element tree of a URDF or SRDF file and the line of each element, so
that every problem names its line."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from xml.parsers import expat


def parse_xml(data: bytes) -> tuple[ET.Element, dict]:
    """The element tree of ``data`` and the 1-based line of every element (expat events feed an
    ElementTree TreeBuilder, which keeps no positions itself). expat.ExpatError on broken XML."""
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()
    lines: dict = {}

    def start(tag, attrs):
        lines[builder.start(tag, attrs)] = parser.CurrentLineNumber

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.Parse(data, True)
    return builder.close(), lines
