"""`npu-smi info` (the card table and its process table, in the 910B, A3 and 310P layouts) and the
"Key : Value" views (`npu-smi info -t board -i N`, `-t memory`, `-l`).

Layouts seen in real pastes:
  910B / A2   | 0     910B2   | OK   | 98.1  32  0 / 0 |            then  | 0  | 0000:C1:00.0 | 0  0 / 0  3382 / 65536 |
  A3          | 0     Ascend910 | OK | ... |   then  | 0     0 | 0000:9D:00.0 | ... |   (two chips per NPU, Chip Phy-ID)
  310P        | 32768 310P3   | OK   | NA  56  0 / 0 |             then  | 0  3 | 0000:81:00.0 | 0  1846 / 21527 |
The header "npu-smi 24.1.rc3   Version: 24.1.rc3" carries the tool version and, after "Version:", the driver's.
"""

from __future__ import annotations

import re

from bot.environment.models import NpuCard, NpuProcess
from bot.engine.normalize import PY_D as D, PY_NOT_S as NS, PY_S as S, compile_linear
from bot.environment.parsers import MAX_LINE, TOOL, Parsed, Signal

_HEADER = re.compile(r"npu-smi\s+(\d[\w.]*)\s+Version:\s*(\d[\w.]*)", re.IGNORECASE)
_BORDER = re.compile(r"^\s*[+|][-=+|\s]*$")
_NAME_CELL = re.compile(r"^(\d{1,6})\s+([A-Za-z0-9][\w.\-]*)$")
_CHIP_CELL = re.compile(r"^(\d{1,3})(?:\s+(\d{1,4}))?$")
_BUS_ID = re.compile(r"^[0-9A-Fa-fx]{4}:[0-9A-Fa-fx]{2}:[0-9A-Fa-fx]{2}\.[0-9A-Fa-fx]$")
_HEALTH = re.compile(r"^(OK|Warning|Alarm|Critical|Abnormal|Unknown|Error|NA)$", re.IGNORECASE)
_PAIR = compile_linear(rf"({D}+){S}*/{S}*({D}+)")  # RE2, as _KEY_VALUE: both were quadratic under `re`
_PROC_CHIP = re.compile(r"^(\d{1,6})\s+(\d{1,4})$")
_NO_PROCESS = re.compile(r"No running processes found in NPU\s+(\d+)", re.IGNORECASE)
_ERRORS = re.compile(r"dcmi module initialize failed[^\n]*|ret is -80\d\d|npu-smi: command not found|DrvMngGetConsoleLogLevel failed", re.IGNORECASE)
_KEY_VALUE = compile_linear(rf"^{S}*([A-Za-z][A-Za-z0-9 ()/.\-]*?){S}+:{S}+({NS}.*?){S}*$")
_KV_FACTS = {"software version": "driver", "firmware version": "firmware"}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse(lines: list[str]) -> Parsed:
    out = Parsed()
    hbm_column: bool | None = None  # from the header row; None when the paste starts below it
    phy_id = False  # "Chip  Phy-ID" in the header: the A3 layout, two chips per NPU named "Ascend910"
    in_processes = False
    pending: tuple[int, str, str | None, int] | None = None  # (npu, name, health, line) of a row waiting for its chip row
    for i, line in enumerate(lines):
        if len(line) > MAX_LINE or not ("|" in line or "+-" in line or "+=" in line or "npu-smi" in line or "dcmi" in line
                                        or "Drv" in line or "No running" in line or "ret is" in line):
            continue
        header = _HEADER.search(line)
        if header:
            out.add("driver", header.group(2), "npu-smi info", i, TOOL)
            continue
        if (error := _ERRORS.search(line)) is not None:
            out.signals.append(Signal("npu-smi-error", i, error.group(0)))
            out.consumed.add(i)
            continue
        if _NO_PROCESS.search(line):
            out.consumed.add(i)
            continue
        if _BORDER.match(line) and ("+" in line or "|" in line) and len(line.strip()) > 8:
            out.consumed.add(i)
            continue
        if "|" not in line:
            continue
        if "Memory-Usage" in line or "HBM-Usage" in line:
            hbm_column = "HBM-Usage" in line
            phy_id = phy_id or "Phy-ID" in line
            out.consumed.add(i)
            continue
        if "Health" in line and "Name" in line:
            in_processes = False
            out.consumed.add(i)
            continue
        if "Process id" in line or "Process name" in line:
            in_processes = True
            out.consumed.add(i)
            continue
        cells = _cells(line)
        if in_processes:
            _process_row(cells, i, out)
            continue
        if len(cells) >= 2 and (name := _NAME_CELL.match(cells[0])) and _HEALTH.match(cells[1]):
            if pending is not None:  # a trimmed paste: the previous card lost its second row
                out.cards.append(_bare(pending, phy_id))
            pending = (int(name.group(1)), name.group(2), cells[1], i)
            out.consumed.add(i)
            continue
        if pending is not None and len(cells) >= 2 and (chip := _CHIP_CELL.match(cells[0])) and _BUS_ID.match(cells[1]):
            phy_id = phy_id or chip.group(2) is not None and pending[1].lower() == "ascend910"
            out.cards.append(_card(pending, int(chip.group(1)), cells, hbm_column, phy_id))
            out.consumed.add(i)
            pending = None
    if pending is not None:  # a paste cut after the name row still names the chip
        out.cards.append(_bare(pending, phy_id))
    _key_values(lines, out)
    return out


def _family(name: str, phy_id: bool) -> str | None:
    """Only the A3 layout needs the table's shape to be told apart (its chips are just "Ascend910");
    every other family is read from the chip name by the compatibility table."""
    return "A3" if phy_id and name.lower() == "ascend910" else None


def _bare(pending: tuple[int, str, str | None, int], phy_id: bool) -> NpuCard:
    npu, name, health, line_no = pending
    return NpuCard(npu=npu, name=name, health=health, line_no=line_no + 1, family=_family(name, phy_id))


def _card(pending: tuple[int, str, str | None, int], chip: int, cells: list[str], hbm_column: bool | None, phy_id: bool) -> NpuCard:
    npu, name, health, line_no = pending
    pairs = _PAIR.findall(cells[2]) if len(cells) > 2 else []
    used = total = None
    kind = "HBM"
    # 910B/A3 rows hold "Memory-Usage" then "HBM-Usage"; 310P rows only the device (DDR) memory. A row cut
    # before its HBM pair must not pass its Memory-Usage off as HBM.
    has_hbm = hbm_column if hbm_column is not None else len(pairs) >= 2
    wanted = 2 if has_hbm else 1
    if len(pairs) >= wanted:
        used, total = int(pairs[wanted - 1][0]), int(pairs[wanted - 1][1])
        kind = "HBM" if has_hbm else "DDR"
    return NpuCard(npu=npu, chip=chip, name=name, health=health, hbm_used_mb=used, hbm_total_mb=total or None,
                   memory_kind=kind, bus_id=cells[1], line_no=line_no + 1, family=_family(name, phy_id))


def _process_row(cells: list[str], i: int, out: Parsed) -> None:
    if len(cells) < 4:
        return
    where = _PROC_CHIP.match(cells[0])
    if not where or not cells[1].isdigit():
        return
    memory = cells[3].split()[0] if cells[3].split() else ""
    out.processes.append(NpuProcess(npu=int(where.group(1)), chip=int(where.group(2)), pid=int(cells[1]), name=cells[2][:60],
                                    memory_mb=int(memory) if memory.isdigit() else None, line_no=i + 1))
    out.consumed.add(i)


def _key_values(lines: list[str], out: Parsed) -> None:
    """The padded "Key : Value" views of npu-smi (board, memory, -l); only lines in a run of such lines count,
    so a stray "Note : ..." sentence is not taken for one."""
    runs: list[int] = []
    for i, line in enumerate(lines):
        if len(line) <= MAX_LINE and "   :" in line and _KEY_VALUE.match(line):
            runs.append(i)
    if len(runs) < 2:
        return
    for i in runs:
        match = _KEY_VALUE.match(lines[i])
        assert match is not None
        key, value = match.group(1).strip().lower(), match.group(2).strip()
        out.consumed.add(i)
        if key in _KV_FACTS:
            out.add(_KV_FACTS[key], value.split()[0], "npu-smi info -t board", i, TOOL)
        elif key in ("chip name", "chip type") and value.upper() != "NA":
            out.add("chip", value.split()[0], "npu-smi info -t board", i, TOOL)
        elif key == "compatibility" and value.upper() not in ("OK", "NA"):
            out.signals.append(Signal("firmware-compatibility", i, value))
