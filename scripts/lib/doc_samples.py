"""Checks that every ```swift sample in README.md and docs/*.md is compiled by the tests.

A sample is compiled when a file under Tests/ holds the same lines between `// doc-sample: DOC` and
`// end doc-sample` (indentation removed; the sample's `import` lines and blank lines are not compared, the test
file has its own imports). A sample without such a copy, or whose copy differs, fails the check with one line
naming the document, the sample's line and what is wrong.

    python3 scripts/lib/doc_samples.py REPO_ROOT
"""

import glob
import os
import re
import sys
import textwrap


def samples(path):
    """(line number, lines) of each ```swift block in a Markdown file."""
    found, inside, start, lines = [], False, 0, []
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            if not inside and re.match(r"^```swift\s*$", line):
                inside, start, lines = True, number, []
            elif inside and line.startswith("```"):
                found.append((start, lines))
                inside = False
            elif inside:
                lines.append(line.rstrip("\n"))
    return found


def comparable(lines):
    return [line.rstrip() for line in lines if line.strip() and not line.startswith("import ")]


def copies(root):
    """Document path -> list of (test file, line number, lines) between the markers."""
    result = {}
    for path in glob.glob(os.path.join(root, "Tests", "**", "*.swift"), recursive=True):
        with open(path, encoding="utf-8") as file:
            text = file.read().split("\n")
        for index, line in enumerate(text):
            match = re.match(r"^\s*// doc-sample: (\S+)\s*$", line)
            if not match:
                continue
            end = next((j for j in range(index + 1, len(text)) if text[j].strip() == "// end doc-sample"), None)
            if end is None:
                sys.exit(f"doc samples: {os.path.relpath(path, root)}:{index + 1}: no '// end doc-sample' marker")
            body = textwrap.dedent("\n".join(text[index + 1:end])).split("\n")
            result.setdefault(match.group(1), []).append((os.path.relpath(path, root), index + 1, body))
    return result


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    documents = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    compiled = copies(root)
    problems, checked = [], 0
    for document in documents:
        name = os.path.relpath(document, root)
        candidates = compiled.get(name, [])
        for line, lines in samples(document):
            checked += 1
            wanted = comparable(lines)
            if not any(comparable(body) == wanted for _, _, body in candidates):
                where = ", ".join(f"{path}:{number}" for path, number, _ in candidates) or "none"
                problems.append(f"{name}:{line}: Swift sample has no identical compiled copy (copies marked "
                                f"'// doc-sample: {name}': {where})")
    for problem in problems:
        print(f"FAIL {problem}", file=sys.stderr)
    if problems:
        sys.exit(f"doc samples: {len(problems)} of {checked} Swift samples are not compiled by any test")
    print(f"doc samples: all {checked} Swift samples match a compiled copy under Tests/")


if __name__ == "__main__":
    main()
