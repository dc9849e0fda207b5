"""What a person sees of an HTML report: it is rendered by Debian's Chromium, headless, to a
PNG screenshot, and the screenshot's pixels are checked:
  - the verdict's band is at the top, in the verdict's colour;
  - the picture (found by its frame, render_html.PICTURE_BORDER) is on the first screen;
  - inside it, the knot's highlighted nodes (render_dot.KNOT_FILL) are visible: as many
    separate highlighted boxes as the picture has knot nodes, and none without a knot.

The PNG is decoded here (zlib and the five PNG row filters): no imaging library needed.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "frontends", "analysis"))
from mqd_analysis import render_dot, render_html  # noqa: E402

WINDOW = (1200, 900)
VERDICT_BAND = {"deadlock": (0x7a, 0x00, 0x10), "unknown": (0x8a, 0x5a, 0x00),
                "no deadlock": (0x1d, 0x6b, 0x2f)}
MIN_BOX_PIXELS = 150   # a highlighted node is far larger; stray anti-aliased pixels smaller


class RenderCheckError(Exception):
    """Chromium missing or failing: the check cannot be made (a failure, never a skip)."""


def _rgb(hex_colour):
    h = hex_colour.lstrip("#")
    return tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))


def decode_png(data):
    """(width, height, rows) of an 8-bit RGB or RGBA, non-interlaced PNG; rows are lists of
    (r, g, b) tuples."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError("unsupported PNG (depth %d, colour type %d, interlace %d)"
                         % (depth, colour, interlace))
    bpp = 4 if colour == 6 else 3
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    previous = bytearray(stride)
    rows = []
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            for i in range(stride):
                line[i] = (line[i] + previous[i]) & 0xFF
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        elif kind != 0:
            raise ValueError("bad PNG filter %d in row %d" % (kind, y))
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        previous = line
    return width, height, rows


def screenshot(html_path, png_path):
    """Renders the report with headless Chromium; raises RenderCheckError if it cannot."""
    chromium = shutil.which("chromium")
    if chromium is None:
        raise RenderCheckError("chromium is not installed (Debian: apt-get install chromium; "
                               "tools/install-deps.sh --test installs it)")
    profile = tempfile.mkdtemp(prefix="mqd-chromium-")
    try:
        result = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars", "--user-data-dir=" + profile,
             "--screenshot=" + png_path, "--window-size=%d,%d" % WINDOW,
             "file://" + os.path.abspath(html_path)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        raise RenderCheckError("chromium did not render the report within 180 s")
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if result.returncode != 0 or not os.path.exists(png_path):
        raise RenderCheckError("chromium failed (%d): %s" % (result.returncode,
                                                            result.stdout.strip()[-500:]))


def _boxes(rows, box, colour):
    """Sizes of the 4-connected regions of `colour` inside box = (x0, y0, x1, y1). Chromium
    paints solid fills in their exact colour (measured), so pixels are compared exactly."""
    x0, y0, x1, y1 = box
    seen, sizes = set(), []
    for y in range(y0, y1 + 1):
        for x in range(x0, x1 + 1):
            if (x, y) in seen or rows[y][x] != colour:
                continue
            stack, size = [(x, y)], 0
            seen.add((x, y))
            while stack:
                cx, cy = stack.pop()
                size += 1
                for nx, ny in ((cx + 1, cy), (cx - 1, cy), (cx, cy + 1), (cx, cy - 1)):
                    if x0 <= nx <= x1 and y0 <= ny <= y1 and (nx, ny) not in seen and \
                            rows[ny][nx] == colour:
                        seen.add((nx, ny))
                        stack.append((nx, ny))
            sizes.append(size)
    return sizes


def check_screenshot(png_path, verdict, expected_knot_nodes):
    """Problems with what the screenshot shows (an empty list when it is right)."""
    with open(png_path, "rb") as f:
        width, height, rows = decode_png(f.read())
    problems = []
    band = VERDICT_BAND[verdict]
    top = rows[10].count(band)
    if top < width // 2:
        problems.append("the verdict's band (%s) is not at the top of the page" % (band,))
    frame = _rgb(render_html.PICTURE_BORDER)
    points = [(x, y) for y in range(height) if frame in rows[y]
              for x in range(width) if rows[y][x] == frame]
    if not points:
        return problems + ["the picture's frame is not on the first screen"]
    box = (min(p[0] for p in points), min(p[1] for p in points),
           max(p[0] for p in points), max(p[1] for p in points))
    boxes = [s for s in _boxes(rows, box, _rgb(render_dot.KNOT_FILL)) if s >= MIN_BOX_PIXELS]
    if len(boxes) != expected_knot_nodes:
        problems.append("%d highlighted knot nodes visible in the picture (%s), expected %d"
                        % (len(boxes), ", ".join("%d px" % s for s in boxes) or "none",
                           expected_knot_nodes))
    return problems


def check_report(html_path, png_path, verdict, expected_knot_nodes):
    screenshot(html_path, png_path)
    return check_screenshot(png_path, verdict, expected_knot_nodes)
