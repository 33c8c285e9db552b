"""Writes the wheel the pip column downloads (fixtures/files/wheels/rangecheck_probe-1.0-py3-none-any.whl): a
valid, installable pure-Python wheel whose payload is 8 MiB of text in which every 64-byte line names its own
offset, so a resume at the wrong place, a splice or a repeated stretch changes the bytes; stored without
compression and with fixed timestamps, so the same file comes out every time.

    python3 scripts/lib/probe_wheel.py [OUTPUT]"""

import base64
import hashlib
import sys
import zipfile

NAME, VERSION = "rangecheck_probe", "1.0"
PAYLOAD_BYTES = 8 * 1024 * 1024
output = sys.argv[1] if len(sys.argv) > 1 else f"fixtures/files/wheels/{NAME}-{VERSION}-py3-none-any.whl"


def payload() -> bytes:
    lines = []
    for offset in range(0, PAYLOAD_BYTES, 64):
        line = f"{offset:012x} rangecheck probe wheel payload, line {offset // 64:09d}"
        lines.append(line.ljust(63, ".") + "\n")
    return "".join(lines).encode()


dist_info = f"{NAME}-{VERSION}.dist-info"
files = {
    f"{NAME}/__init__.py": b'"""The probe wheel of rangecheck\'s pip column; its data is payload.txt."""\n',
    f"{NAME}/payload.txt": payload(),
    f"{dist_info}/METADATA": (
        f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
        "Summary: The wheel rangecheck serves to pip, every row's faults over it\n"
    ).encode(),
    f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: rangecheck probe_wheel.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for path, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(data)}")
record.append(f"{dist_info}/RECORD,,")
files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()

with zipfile.ZipFile(output, "w", compression=zipfile.ZIP_STORED) as wheel:
    for path, data in files.items():
        info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        wheel.writestr(info, data)
