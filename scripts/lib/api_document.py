#!/usr/bin/env python3
"""Writes Sources/Conformance/Service/ConformanceAPIDocument+Text.swift from docs/conformance-api.json.

The service serves the document (with the running catalogue's names added) from the Swift copy, so an installed
rangecheck needs no file beside it; Tests/ConformanceTests/ServiceAPIDocumentTests.swift fails when the two differ.
Run after editing the document:  python3 scripts/lib/api_document.py
"""
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parents[2]
document = (root / "docs/conformance-api.json").read_text(encoding="utf-8")
if '"""#' in document:
    sys.exit("docs/conformance-api.json contains the raw-string terminator \"\"\"#")
# Indented as swift-format wants; Swift takes the closing delimiter's indentation off every line.
body = "".join("        " + line if line.strip() else line for line in document.splitlines(keepends=True))
swift = (
    "// Written by scripts/lib/api_document.py from docs/conformance-api.json: edit the document, then run it.\n"
    "\n"
    "extension ConformanceAPIDocument {\n"
    "    /// docs/conformance-api.json, as the service serves it before the catalogue's names are added.\n"
    "    static let text = #\"\"\"\n"
    + body
    + "        \"\"\"#\n"
    "}\n"
)
target = root / "Sources/Conformance/Service/ConformanceAPIDocument+Text.swift"
target.write_text(swift, encoding="utf-8")
print(f"wrote {target.relative_to(root)}")
