"""Reads files out of Debian .deb packages with the standard library only (no dpkg), so the
corpus can be rebuilt on any machine with python3: a .deb is an `ar` archive whose
`data.tar.*` member holds the package's files.
"""
import fnmatch
import gzip
import io
import lzma
import os
import tarfile

AR_MAGIC = b"!<arch>\n"


def ar_members(path):
    """{member name: bytes} of an ar archive (the few members of a .deb)."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(AR_MAGIC):
        raise ValueError(f"[corpus] {path} is not a .deb (ar) archive; fetch it again with corpus/fetch.sh")
    members, pos = {}, len(AR_MAGIC)
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        pos += 60
        members[name] = data[pos:pos + size]
        pos += size + (size & 1)  # members are 2-byte aligned
    return members


def data_tar(path):
    """The package's file tree as an open tarfile."""
    members = ar_members(path)
    for name, blob in members.items():
        if name == "data.tar.xz":
            return tarfile.open(fileobj=io.BytesIO(lzma.decompress(blob)))
        if name == "data.tar.gz":
            return tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob)))
        if name == "data.tar":
            return tarfile.open(fileobj=io.BytesIO(blob))
    raise ValueError(f"[corpus] {path}: no data.tar.xz/.gz member (found {sorted(members)}); "
                     "unpack it with dpkg-deb --fsys-tarfile and extend debfile.py")


def read_files(path, patterns):
    """Yields (file name inside the package, bytes) for regular files whose name (without
    the leading './') matches one of the fnmatch patterns; .gz and dictd's .dz (gzip with a random-access
    index in its header) files are decompressed."""
    with data_tar(path) as tar:
        for info in tar:
            if not info.isfile():
                continue
            name = info.name[2:] if info.name.startswith("./") else info.name
            if not any(fnmatch.fnmatch(name, p) for p in patterns):
                continue
            blob = tar.extractfile(info).read()
            if name.endswith((".gz", ".dz")):
                blob = gzip.decompress(blob)
            yield name, blob


def find_deb(folder, package):
    """The .deb of `package` in `folder` (apt-get download names: PACKAGE_VERSION_ARCH.deb)."""
    hits = sorted(f for f in os.listdir(folder) if f.startswith(package + "_") and f.endswith(".deb"))
    if not hits:
        raise FileNotFoundError(f"[corpus] no {package}_*.deb in {folder}; run scripts/toy-model/corpus/fetch.sh")
    return os.path.join(folder, hits[-1])


def version_of(deb_path):
    """Version from an apt-get download file name ('%3a' is the epoch colon)."""
    return os.path.basename(deb_path).split("_")[1].replace("%3a", ":")
