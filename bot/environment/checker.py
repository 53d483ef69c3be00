"""Hold what a paste says about the machine against the compatibility table.

Every check names the exact pair it looked at and the table row (with its source) that decided it. A pair that
the table does not cover is "unverified", never "mismatch": the bot only says a combination is wrong when a cited
release note says so.
"""

from __future__ import annotations

from bot.corpus.compat import ChipFamily, CompatTable, MindieRow, VllmAscendRow
from bot.environment.extract import Extracted, extract
from bot.environment.releases import releases_asked
from bot.environment.models import LABELS, Check, Command, EnvironmentReport, Fact, Observation
from bot.environment.versions import Version, parse_version, python_series

ONLY_COVERAGE = 0.6  # a paste at least this much environment output is an environment dump
# ... and of at least this many lines: a one-line question that names its chip ("910B 上推理比 CPU 还慢") is a
# question, and deserves the diagnosis (or the family's triage), not only an environment check.
ONLY_MIN_LINES = 2
HBM_FULL = 0.95  # a card this full leaves nothing for a new model
_ORDER = {"mismatch": 0, "warning": 1, "unverified": 2, "ok": 3}
_HEALTHY = {"ok", "na", ""}

COMMANDS: list[tuple[tuple[str, ...], str, str, str]] = [
    (("chip", "driver"), "npu-smi info", "Chip, health, HBM use, processes per card and the driver version.",
     "各卡的芯片型号、健康状态、HBM 占用、进程以及驱动版本。"),
    (("firmware",), "npu-smi info -t board -i 0", "Driver (Software Version) and firmware version of card 0.",
     "0 号卡的驱动（Software Version）与固件版本。"),
    (("driver",), "cat /usr/local/Ascend/driver/version.info", "Installed NPU driver version.", "已安装的 NPU 驱动版本。"),
    (("cann",), "cat /usr/local/Ascend/ascend-toolkit/latest/*/ascend_toolkit_install.info", "Installed CANN toolkit version.",
     "已安装的 CANN toolkit 版本。"),
    (("nnal",), "cat /usr/local/Ascend/nnal/atb/latest/version.info", "NNAL / ATB version (needed by MindIE and vllm-ascend).",
     "NNAL / ATB 版本（MindIE 与 vllm-ascend 需要）。"),
    (("mindie", "atb_models"), "cat /usr/local/Ascend/mindie/latest/version.info", "MindIE version and its components.",
     "MindIE 及其组件的版本。"),
    (("torch", "torch_npu", "transformers", "vllm", "vllm_ascend", "mindie", "triton_ascend"),
     'pip list 2>/dev/null | grep -iE "torch|transformers|vllm|mindie|atb|triton"', "Versions of the Python packages that must match.",
     "需要相互配套的 Python 包版本。"),
    (("python",), "python --version", "Python version of the environment that runs the service.", "运行服务的 Python 版本。"),
    (("arch", "os", "glibc"), "uname -m && cat /etc/os-release && ldd --version | head -1", "CPU architecture, OS and glibc.",
     "CPU 架构、操作系统与 glibc 版本。"),
]
CORE = ("chip", "driver", "cann", "torch", "torch_npu", "python")


def all_commands() -> list[Command]:
    return [Command(run=run, explain=en, explain_zh=zh) for _, run, en, zh in COMMANDS]


def check_environment(text: str, table: CompatTable) -> EnvironmentReport | None:
    """The Environment section for a paste, or None when it holds no environment facts at all."""
    found = extract(text)
    releases = releases_asked(text, table)
    if not found.facts and not found.cards and not found.signals:
        # A question about which releases go together: the table's rows are the whole section.
        return EnvironmentReport(releases=releases) if releases else None
    report = Checker(found, table, text).report()
    if not releases:
        return report
    # A question names its release; what else is "missing" from it is not worth a list of collection commands.
    return report.model_copy(update={"releases": releases, "missing": [], "commands": []})


class Checker:
    def __init__(self, found: Extracted, table: CompatTable, text: str):
        self.found = found
        self.table = table
        self.text = text
        self.checks: list[Check] = []
        self.observations: list[Observation] = []
        self.family = self._family()

    def v(self, component: str) -> Version | None:
        return self.found.version(component)

    # ---- the report ---------------------------------------------------------------------------------
    def report(self) -> EnvironmentReport:
        self.torch_pair()
        self.torch_npu_cann()
        self.torch_python()
        self.mindie()
        self.cann_driver()
        self.vllm_ascend()
        self.chip_support()
        self.card_observations()
        self.signal_observations()
        self.feature_observations()
        checks = sorted(self.checks, key=lambda c: _ORDER[c.verdict])
        observations = sorted(self.observations, key=lambda o: {"error": 0, "warning": 1, "info": 2}[o.severity])
        missing = self._missing()
        cards = [c.model_copy(update={"family": self.family.id}) if self.family and c.family is None else c for c in self.found.cards]
        return EnvironmentReport(
            facts=self._facts(), cards=cards, processes=self.found.processes, checks=checks, observations=observations,
            family=self.family.title if self.family else None, verdict=_verdict(checks),
            only=self.found.coverage >= ONLY_COVERAGE and self.found.environment_lines >= ONLY_MIN_LINES, missing=missing, commands=_commands_for(missing),
        )

    def _facts(self) -> list[Fact]:
        order = {name: i for i, name in enumerate(LABELS)}
        return sorted(self.found.facts, key=lambda f: order.get(f.component, 99))

    def _family(self) -> ChipFamily | None:
        for card in self.found.cards:
            if card.family and (family := self.table.family_by_id(card.family)) is not None:
                return family
        names = [c.name for c in self.found.cards] + [v for v in [self.found.value("chip")] if v]
        for name in names:
            if (family := self.table.family(name)) is not None:
                return family
        return None

    def _missing(self) -> list[str]:
        wanted = list(CORE)
        lowered = self.text.lower()
        if "mindie" in lowered or self.v("mindie"):
            wanted.append("mindie")
        if "vllm" in lowered:
            wanted += ["vllm", "vllm_ascend"]
        present = {f.component for f in self.found.facts if f.value} | ({"chip"} if self.found.cards else set())
        return [c for c in wanted if c not in present]

    def add(self, pair: tuple[str, str], values: tuple[str, str], verdict: str, en: str, zh: str, source: str,
            fix: str | None = None, fix_zh: str | None = None) -> None:
        self.checks.append(Check(pair=pair, values=values, verdict=verdict, message=en, message_zh=zh, fix=fix, fix_zh=fix_zh,
                                 source=source))

    def pair(self, pair: tuple[str, str], values: tuple[str, str], fits: bool, source: str, ok: tuple[str, str],
             mismatch: tuple[str, str], fix: tuple[str, str]) -> None:
        """One pair checked against its row: the "ok" wording when it fits, else the mismatch wording and the fix."""
        if fits:
            self.add(pair, values, "ok", *ok, source)
        else:
            self.add(pair, values, "mismatch", *mismatch, source, *fix)

    # ---- torch and torch_npu ------------------------------------------------------------------------
    def torch_pair(self) -> None:
        torch, npu = self.v("torch"), self.v("torch_npu")
        if torch is None or npu is None or not self.table.torch_npu:
            return
        rows = self.table.find(self.table.torch_npu, "torch_npu", npu)
        expected = parse_version(rows[0].torch) if rows else None
        wanted = expected or parse_version(".".join(map(str, npu.base())))  # torch_npu X.Y.Z[.postN] is built for torch X.Y.Z
        want = ".".join(map(str, wanted.base()))
        source = rows[0].source if rows else self.table.torch_npu[0].source
        if torch.same_base(wanted):
            self.add(("torch", "torch_npu"), (torch.text, npu.text), "ok", f"torch_npu {npu} is built for torch {want}.",
                     f"torch_npu {npu} 对应 torch {want}。", source)
            return
        others = [r.torch_npu for r in self.table.torch_npu if parse_version(r.torch).same_base(torch)][:3]
        alt = f" or a torch_npu built for torch {torch}: {', '.join(others)}" if others else ""
        alt_zh = f"，或安装与 torch {torch} 配套的 torch_npu：{', '.join(others)}" if others else ""
        self.add(("torch", "torch_npu"), (torch.text, npu.text), "mismatch",
                 f"torch_npu {npu} is built for torch {want}, but torch {torch} is installed.",
                 f"torch_npu {npu} 需要 torch {want}，但安装的是 torch {torch}。", source,
                 f"pip install torch=={want}{alt}", f"pip install torch=={want}{alt_zh}")

    def torch_npu_cann(self) -> None:
        npu, cann = self.v("torch_npu"), self.v("cann")
        if npu is None or cann is None:
            return
        rows = self.table.find(self.table.torch_npu, "torch_npu", npu)
        for_cann = [r.torch_npu for r in self.table.torch_npu if parse_version(r.cann).same_series(cann)][:4]
        if not rows:
            hint = f" torch_npu releases for CANN {cann}: {', '.join(for_cann)}." if for_cann else ""
            hint_zh = f"与 CANN {cann} 配套的 torch_npu：{', '.join(for_cann)}。" if for_cann else ""
            self.add(("torch_npu", "cann"), (npu.text, cann.text), "unverified",
                     f"torch_npu {npu} is not a release in the table (a nightly or a local build?).{hint}",
                     f"torch_npu {npu} 不在配套表中（可能是每日构建或自行编译）。{hint_zh}", self.table.torch_npu[0].source)
            return
        row = rows[0]
        paired = parse_version(row.cann)
        span = self.table.pta_range(row.pta)
        low = parse_version(span.cann_min) if span else paired
        high = parse_version(span.cann_max) if span and span.cann_max else paired
        source = span.source if span else row.source
        values = (npu.text, cann.text)
        if paired.same_series(cann):
            self.add(("torch_npu", "cann"), values, "ok", f"torch_npu {npu} was released with CANN {row.cann}.",
                     f"torch_npu {npu} 与 CANN {row.cann} 配套发布。", row.source)
        elif cann < low and not low.same_series(cann):
            self.add(("torch_npu", "cann"), values, "mismatch",
                     f"torch_npu {npu} (Ascend Extension for PyTorch {row.pta}) needs CANN {low} or later; CANN {cann} is older.",
                     f"torch_npu {npu}（Ascend Extension for PyTorch {row.pta}）需要 CANN {low} 及以上，当前 CANN {cann} 过旧。", source,
                     f"install CANN {row.cann}" + (f", or torch_npu {' / '.join(for_cann)} for CANN {cann}" if for_cann else ""),
                     f"安装 CANN {row.cann}" + (f"，或安装与 CANN {cann} 配套的 torch_npu {' / '.join(for_cann)}" if for_cann else ""))
        elif span is not None and (cann <= high or high.same_series(cann)):
            self.add(("torch_npu", "cann"), values, "ok",
                     f"torch_npu {npu} was released with CANN {row.cann}; Ascend Extension for PyTorch {row.pta} supports CANN "
                     f"{span.cann_min} to {span.cann_max}.",
                     f"torch_npu {npu} 随 CANN {row.cann} 发布；Ascend Extension for PyTorch {row.pta} 支持 CANN {span.cann_min}～{span.cann_max}。",
                     source)
        else:
            self.add(("torch_npu", "cann"), values, "warning",
                     f"torch_npu {npu} was released with CANN {row.cann}; CANN {cann} is not listed for it.",
                     f"torch_npu {npu} 随 CANN {row.cann} 发布，配套表未列出 CANN {cann}。", source,
                     f"use CANN {row.cann}" + (f", or torch_npu {' / '.join(for_cann)}" if for_cann else ""),
                     f"使用 CANN {row.cann}" + (f"，或 torch_npu {' / '.join(for_cann)}" if for_cann else ""))

    def torch_python(self) -> None:
        torch, python = self.v("torch"), python_series(self.found.value("python"))
        row = self.table.python_for_torch(torch)
        if torch is None or python is None or row is None:
            return
        supported = ", ".join(row.python)
        self.pair(("torch", "python"), (torch.text, python), python in row.python, row.source,
                  ok=(f"PyTorch {row.torch} supports Python {python}.", f"PyTorch {row.torch} 支持 Python {python}。"),
                  mismatch=(f"PyTorch {row.torch} (and its torch_npu) supports Python {supported}, not {python}.",
                            f"PyTorch {row.torch}（及其 torch_npu）支持 Python {supported}，不支持 {python}。"),
                  fix=(f"use Python {row.python[-1]}", f"改用 Python {row.python[-1]}"))

    # ---- MindIE -------------------------------------------------------------------------------------
    def mindie(self) -> None:
        mindie = self.v("mindie")
        if mindie is None:
            return
        rows: list[MindieRow] = [r for r in self.table.mindie if parse_version(r.mindie).same_series(mindie)]
        if not rows:
            known = ", ".join(r.mindie for r in self.table.mindie)
            self.add(("mindie", "table"), (mindie.text, "-"), "unverified",
                     f"MindIE {mindie} is not in the compatibility table (it covers {known}).",
                     f"MindIE {mindie} 不在配套表中（已收录 {known}）。", self.table.mindie[0].source if self.table.mindie else "")
            return
        row = rows[0]
        cann, torch, python, glibc = self.v("cann"), self.v("torch"), python_series(self.found.value("python")), self.v("glibc")
        self.expect(f"MindIE {row.mindie}", [("cann", " / ".join(row.cann) if cann is None else ""),
                                             ("torch", " / ".join(row.torch) if torch is None else "")], row.source)
        if cann is not None:
            want = " / ".join(row.cann)
            self.pair(("mindie", "cann"), (mindie.text, cann.text), any(parse_version(c).same_series(cann) for c in row.cann), row.source,
                      ok=(f"MindIE {row.mindie} is released for CANN {cann}.", f"MindIE {row.mindie} 与 CANN {cann} 配套。"),
                      mismatch=(f"MindIE {row.mindie} must be installed with CANN {want}; CANN {cann} is installed.",
                                f"MindIE {row.mindie} 必须配套 CANN {want}，当前为 CANN {cann}。"),
                      fix=(f"install CANN {want} (toolkit, kernels/ops and NNAL of the same version), or the MindIE release made for CANN {cann}",
                           f"安装 CANN {want}（toolkit、kernels/ops 与 NNAL 同一版本），或改用与 CANN {cann} 配套的 MindIE"))
        if torch is not None and row.torch:
            want = " / ".join(row.torch)
            self.pair(("mindie", "torch"), (mindie.text, torch.text), any(parse_version(t).same_base(torch) for t in row.torch), row.source,
                      ok=(f"MindIE {row.mindie} supports torch {torch.text}.", f"MindIE {row.mindie} 支持 torch {torch.text}。"),
                      mismatch=(f"MindIE {row.mindie} is built for torch {want}; torch {torch} is installed.",
                                f"MindIE {row.mindie} 基于 torch {want} 构建，当前为 torch {torch}。"),
                      fix=(f"pip install torch=={row.torch[0]} with its torch_npu", f"pip install torch=={row.torch[0]} 及配套的 torch_npu"))
        if python is not None and row.python:
            want = " / ".join(row.python)
            self.pair(("mindie", "python"), (mindie.text, python), python in row.python, row.source,
                      ok=(f"MindIE {row.mindie} packages are built for Python {want}.", f"MindIE {row.mindie} 的安装包基于 Python {want}。"),
                      mismatch=(f"MindIE {row.mindie} packages are built for Python {want}; Python {python} is in use.",
                                f"MindIE {row.mindie} 的安装包基于 Python {want}，当前为 Python {python}。"),
                      fix=(f"use Python {row.python[0]}", f"改用 Python {row.python[0]}"))
        if glibc is not None and row.glibc_min and glibc < parse_version(row.glibc_min):
            self.add(("mindie", "glibc"), (mindie.text, glibc.text), "mismatch",
                     f"MindIE {row.mindie} (abi0 package) needs glibc {row.glibc_min} or later; this system has glibc {glibc}.",
                     f"MindIE {row.mindie}（abi0 包）需要 glibc {row.glibc_min} 及以上，当前为 glibc {glibc}。",
                     "https://github.com/Ascend/MindIE-LLM/blob/8b4871ad31f592aa863f6255760e4934484d78e4/docs/zh/user_guide/install/source/preparing_software_and_dependencies.md",
                     "use an OS image with a newer glibc (for example the MindIE container image)", "换用 glibc 更新的操作系统（例如 MindIE 官方容器镜像）")
        self._mindie_driver(mindie, row)

    def _mindie_driver(self, mindie: Version, row: MindieRow) -> None:
        driver = self.v("driver")
        if driver is None:
            return
        floor = next((f for f in self.table.driver_floors if f.product == "mindie"), None)
        minimum, source = (row.driver_min, row.source) if row.driver_min else ((floor.driver_min, floor.source) if floor else (None, ""))
        if minimum is None:
            return
        if driver < parse_version(minimum):
            advice = floor.recommended if floor and floor.recommended else minimum
            self.add(("mindie", "driver"), (mindie.text, driver.text), "mismatch",
                     f"MindIE {row.mindie} needs NPU driver {minimum} or later; driver {driver} is installed.",
                     f"MindIE {row.mindie} 需要 NPU 驱动 {minimum} 及以上，当前驱动为 {driver}。", source,
                     f"upgrade the Ascend HDK (driver and firmware) to {advice} or later", f"将 Ascend HDK（驱动与固件）升级到 {advice} 及以上")

    # ---- CANN and the driver ------------------------------------------------------------------------
    def cann_driver(self) -> None:
        cann, driver = self.v("cann"), self.v("driver")
        row = self.table.cann_row(cann)
        if cann is None or driver is None or row is None:
            return
        values = (cann.text, driver.text)
        if row.driver_min and driver < parse_version(row.driver_min):
            self.add(("cann", "driver"), values, "mismatch",
                     f"CANN {row.cann} needs Ascend HDK {row.driver_min} or later; the NPU driver is {driver}.",
                     f"CANN {row.cann} 需要 Ascend HDK {row.driver_min} 及以上，当前 NPU 驱动为 {driver}。", row.source,
                     f"upgrade the driver and firmware to HDK {row.driver_paired or row.driver_min}",
                     f"将驱动与固件升级到 HDK {row.driver_paired or row.driver_min}")
        elif row.driver_min:
            self.add(("cann", "driver"), values, "ok", f"CANN {row.cann} works with Ascend HDK {row.driver_min} and later.",
                     f"CANN {row.cann} 支持 Ascend HDK {row.driver_min} 及以上。", row.source)
        elif row.driver_paired and driver < parse_version(row.driver_paired):
            self.add(("cann", "driver"), values, "warning",
                     f"CANN {row.cann} is released with Ascend HDK {row.driver_paired}; driver {driver} is older.",
                     f"CANN {row.cann} 配套 Ascend HDK {row.driver_paired}，当前驱动 {driver} 更旧。", row.source,
                     f"check the CANN {row.cann} release notes, or upgrade the driver and firmware to HDK {row.driver_paired}",
                     f"查阅 CANN {row.cann} 版本说明，或将驱动与固件升级到 HDK {row.driver_paired}")
        else:
            self.add(("cann", "driver"), values, "ok", f"CANN {row.cann} is released with Ascend HDK {row.driver_paired}.",
                     f"CANN {row.cann} 配套 Ascend HDK {row.driver_paired}。", row.source)

    # ---- vllm-ascend --------------------------------------------------------------------------------
    def vllm_ascend(self) -> None:
        plugin, vllm = self.v("vllm_ascend"), self.v("vllm")
        if plugin is not None:
            rows = self.table.find(self.table.vllm_ascend, "vllm_ascend", plugin)
            exact = bool(rows)
            if not rows and not plugin.is_dev:  # a bare "0.9.0": the releases of that line
                rows = [r for r in self.table.vllm_ascend if parse_version(r.vllm_ascend).base() == plugin.base()]
            if not rows:
                why = "a development build, which no release table covers" if plugin.is_dev else "not in the compatibility table"
                why_zh = "是开发版构建，不在任何发布配套表中" if plugin.is_dev else "不在配套表中"
                self.add(("vllm_ascend", "table"), (plugin.text, "-"), "unverified", f"vllm-ascend {plugin} is {why}.",
                         f"vllm-ascend {plugin} {why_zh}。", self.table.vllm_ascend[0].source if self.table.vllm_ascend else "")
                return
            name = f"vllm-ascend {plugin}" if exact else f"vllm-ascend {plugin} (releases {', '.join(r.vllm_ascend for r in rows)})"
            self._against_rows(rows, name, "vllm_ascend", plugin.text)
        elif vllm is not None and (self.v("torch_npu") or self.v("cann")):
            # no vllm-ascend version, but this is an NPU machine: hold vllm against every release built for it
            rows = [r for r in self.table.vllm_ascend if any(parse_version(v) == vllm for v in r.vllm)]
            if rows:
                self._against_rows(rows, f"vllm {vllm} (vllm-ascend {', '.join(r.vllm_ascend for r in rows)})", "vllm", vllm.text,
                                   skip=("vllm",))

    def _against_rows(self, rows: list[VllmAscendRow], name: str, component: str, value: str, skip: tuple[str, ...] = ()) -> None:
        source = rows[0].source
        wanted = {
            "vllm": sorted({v for r in rows for v in r.vllm}, key=parse_version),
            "torch": sorted({r.torch for r in rows}, key=parse_version),
            "torch_npu": sorted({r.torch_npu for r in rows}, key=parse_version),
            "cann": sorted({r.cann for r in rows}, key=parse_version),
        }
        absent = [o for o in ("vllm", "torch", "torch_npu", "cann") if o not in skip and self.v(o) is None]
        self.expect(name, [(o, " / ".join(wanted[o])) for o in absent], source)
        for other in ("vllm", "torch", "torch_npu", "cann"):
            have = self.v(other)
            if other in skip or have is None:
                continue
            want = " / ".join(wanted[other])
            label = LABELS[other]
            if other == "cann":
                fits = any(parse_version(c).same_series(have) for c in wanted[other])
                older = all(have < parse_version(c) for c in wanted[other])
                verdict = "ok" if fits else "mismatch" if older else "warning"
            elif other == "torch_npu":
                fits = any(parse_version(c) == have for c in wanted[other])
                same_base = any(parse_version(c).same_base(have) for c in wanted[other])
                verdict = "ok" if fits else "warning" if same_base else "mismatch"
            else:
                fits = any(parse_version(c) == have or (other == "torch" and parse_version(c).same_base(have)) for c in wanted[other])
                verdict = "ok" if fits else "mismatch"
            if verdict == "ok":
                self.add((component, other), (value, have.text), "ok", f"{name} is released with {label} {want}.",
                         f"{name} 配套 {label} {want}。", source)
                continue
            newer = " (newer than the release was tested with)" if verdict == "warning" and other == "cann" else ""
            self.add((component, other), (value, have.text), verdict,
                     f"{name} is released with {label} {want}; {label} {have} is installed{newer}.",
                     f"{name} 配套 {label} {want}，当前为 {label} {have}。", source,
                     _install(other, wanted[other][-1]), _install(other, wanted[other][-1], zh=True))
        python = python_series(self.found.value("python"))
        if python is not None:
            row = rows[0]
            low, below = parse_version(row.python_min), parse_version(row.python_below)
            have = parse_version(python)
            fits = low <= have < below
            self.add((component, "python"), (value, python), "ok" if fits else "mismatch",
                     f"{name} needs Python >= {row.python_min}, < {row.python_below}" + ("." if fits else f"; Python {python} is in use."),
                     f"{name} 需要 Python >= {row.python_min}, < {row.python_below}" + ("。" if fits else f"，当前为 Python {python}。"),
                     source, None if fits else f"use Python {row.python_min}", None if fits else f"改用 Python {row.python_min}")

    def expect(self, name: str, wanted: list[tuple[str, str]], source: str) -> None:
        """What a product release needs that the paste does not show: worth saying when the user asks what to install."""
        wanted = [(c, v) for c, v in wanted if v]
        if not wanted:
            return
        listed = ", ".join(f"{LABELS[c]} {v}" for c, v in wanted)
        self.observations.append(Observation(kind="expected", severity="info", message=f"{name} is released with {listed}.",
                                             message_zh=f"{name} 配套 {listed}。", source=source))

    # ---- chips --------------------------------------------------------------------------------------
    def chip_support(self) -> None:
        if self.family is None:
            return
        chip = self.found.value("chip") or (self.found.cards[0].name if self.found.cards else self.family.id)
        for product, component, label in (("mindie", "mindie", "MindIE"), ("vllm_ascend", "vllm_ascend", "vllm-ascend")):
            if self.found.value(component) is None and not (product == "vllm_ascend" and self.found.value("vllm")):
                continue
            support = self.family.products.get(product)
            if support == "unsupported":
                self.add((component, "chip"), (self.found.value(component) or "-", chip), "mismatch",
                         f"{label} does not support {self.family.title}.", f"{label} 不支持 {self.family.title}。", self.family.source,
                         "run it on Atlas A2 / A3 (or Atlas 300I Duo) hardware", "请在 Atlas A2 / A3（或 Atlas 300I Duo）硬件上运行")
            elif support == "experimental":
                self.add((component, "chip"), (self.found.value(component) or "-", chip), "warning",
                         f"{label} support for {self.family.title} is experimental: many models and features are missing.",
                         f"{label} 对 {self.family.title} 的支持为实验性：许多模型与特性不可用。", self.family.source)

    def feature_observations(self) -> None:
        if self.family is None:
            return
        for feature in self.family.lacks:
            if self.table.asks_for(self.family, feature, self.text):
                self.observations.append(Observation(kind="chip-feature", severity="warning", message=feature.en, message_zh=feature.zh,
                                                     source=feature.source))

    # ---- what npu-smi shows -------------------------------------------------------------------------
    def card_observations(self) -> None:
        cards = self.found.cards
        sick = [c for c in cards if (c.health or "").lower() not in _HEALTHY]
        for card in sick:
            self.observations.append(Observation(
                kind="health", severity="error", line_no=card.line_no,
                message=f"NPU {card.npu} chip {card.chip} reports health {card.health}: run `npu-smi info -t health -i {card.npu}` and check the device log.",
                message_zh=f"NPU {card.npu} chip {card.chip} 健康状态为 {card.health}：执行 `npu-smi info -t health -i {card.npu}` 并查看设备日志。"))
        full = [c for c in cards if c.hbm_total_mb and c.hbm_used_mb is not None and c.hbm_used_mb / c.hbm_total_mb >= HBM_FULL]
        held = {(p.npu, p.chip): p for p in self.found.processes}
        for card in full:
            holder = held.get((card.npu, card.chip)) or next((p for p in self.found.processes if p.npu == card.npu), None)
            by = f" by PID {holder.pid} ({holder.name})" if holder else ""
            by_zh = f"（被 PID {holder.pid}（{holder.name}）占用）" if holder else ""
            free = card.hbm_total_mb - card.hbm_used_mb
            self.observations.append(Observation(
                kind="hbm-full", severity="warning", line_no=card.line_no,
                message=f"NPU {card.npu} chip {card.chip}: {card.hbm_used_mb} of {card.hbm_total_mb} MB {card.memory_kind} in use{by}, "
                        f"{free} MB free: a new model cannot load there. Stop that process or choose another card with ASCEND_RT_VISIBLE_DEVICES.",
                message_zh=f"NPU {card.npu} chip {card.chip}：{card.memory_kind} 已用 {card.hbm_used_mb} / {card.hbm_total_mb} MB{by_zh}，"
                           f"仅剩 {free} MB，新模型无法加载。请停止该进程，或用 ASCEND_RT_VISIBLE_DEVICES 选择其他卡。"))
        full_keys = {(c.npu, c.chip) for c in full}
        for proc in self.found.processes:
            if (proc.npu, proc.chip) in full_keys:
                continue
            memory = f", {proc.memory_mb} MB" if proc.memory_mb is not None else ""
            self.observations.append(Observation(
                kind="card-held", severity="info", line_no=proc.line_no,
                message=f"NPU {proc.npu} chip {proc.chip} is in use by PID {proc.pid} ({proc.name}{memory}); a second service on that card competes for it.",
                message_zh=f"NPU {proc.npu} chip {proc.chip} 正被 PID {proc.pid}（{proc.name}{memory}）使用；在同一张卡上再起服务会争用资源。"))

    def signal_observations(self) -> None:
        by_kind: dict[str, object] = {}
        for signal in self.found.signals:  # one observation per kind; the most specific line wins ("ret is -8005")
            if signal.kind not in by_kind or "ret is" in signal.detail:
                by_kind[signal.kind] = signal
        for signal in by_kind.values():
            if signal.kind == "npu-smi-error":
                self.observations.append(Observation(
                    kind="npu-smi-error", severity="error", line_no=signal.line + 1,
                    message=f"npu-smi cannot reach the NPU ({signal.detail}): in a container, check that /dev/davinci*, /dev/davinci_manager, "
                            "/dev/hisi_hdc and the driver folders are mounted, and that no other container holds the card.",
                    message_zh=f"npu-smi 无法访问 NPU（{signal.detail}）：在容器中请确认已挂载 /dev/davinci*、/dev/davinci_manager、/dev/hisi_hdc "
                               "及驱动目录，且该卡未被其他容器占用。"))
            elif signal.kind == "firmware-compatibility":
                self.observations.append(Observation(
                    kind="firmware", severity="error", line_no=signal.line + 1,
                    message=f"npu-smi reports driver/firmware Compatibility {signal.detail}: install the firmware of the same HDK release as the driver.",
                    message_zh=f"npu-smi 显示驱动与固件兼容性为 {signal.detail}：请安装与驱动同一 HDK 版本的固件。",
                    source="https://www.hiascend.com/document/detail/zh/Atlas%20200I%20A2/24.1.RC3/re/api/api_109.html"))


def _install(component: str, version: str, zh: bool = False) -> str:
    if component in ("torch", "torch_npu", "vllm"):
        package = {"torch_npu": "torch-npu"}.get(component, component)
        return f"pip install {package}=={version}"
    return f"安装 CANN {version}" if zh else f"install CANN {version}"


def _verdict(checks: list[Check]) -> str:
    verdicts = {c.verdict for c in checks}
    for verdict in ("mismatch", "warning", "ok", "unverified"):
        if verdict in verdicts:
            return verdict
    return "unknown"


def _commands_for(missing: list[str]) -> list[Command]:
    out: list[Command] = []
    for components, run, en, zh in COMMANDS:
        if any(c in missing for c in components) and all(run != c.run for c in out):
            out.append(Command(run=run, explain=en, explain_zh=zh))
    return out

