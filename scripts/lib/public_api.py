#!/usr/bin/env python3
"""Reduces SwiftPM's symbol graphs (swift package dump-symbol-graph --minimum-access-level public) to one sorted
line per public declaration of a module, so the committed lists in docs/api/ show every change to the surface.

    public_api.py SYMBOLGRAPH_DIR MODULE        print MODULE's list
    public_api.py SYMBOLGRAPH_DIR MODULE --undocumented   print the public declarations without a doc comment

A line is the symbol's path, a tab, and its declaration as the compiler prints it. Declarations the compiler
synthesizes or inherits (no source location in this module: a protocol's default `!=`, `hash(into:)` of a
synthesized conformance) are left out: they follow from what is listed.
"""
import json
import sys


def declarations(directory, module):
    with open(f"{directory}/{module}.symbols.json") as handle:
        graph = json.load(handle)
    lines = {}
    for symbol in graph["symbols"]:
        location = symbol.get("location", {}).get("uri", "")
        if "/Sources/" + module + "/" not in location:
            continue
        path = ".".join(symbol["pathComponents"])
        declaration = "".join(f["spelling"] for f in symbol.get("declarationFragments", [])).replace("\n", " ")
        documented = bool(symbol.get("docComment", {}).get("lines"))
        lines[f"{path}\t{declaration}"] = documented
    return lines


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: public_api.py SYMBOLGRAPH_DIR MODULE [--undocumented]")
    lines = declarations(sys.argv[1], sys.argv[2])
    undocumented = "--undocumented" in sys.argv[3:]
    for line in sorted(lines):
        if not undocumented or not lines[line]:
            print(line)


if __name__ == "__main__":
    main()
