"""The diagnosis engine: text in -> normalise -> signatures + lexical + dense -> fuse -> Answer.

It knows nothing of Slack; renderers turn its Answer into terminal text, JSON or Slack blocks.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from bot.corpus.faultdiag import FaultDiagError, load_faultdiag
from bot.corpus.loader import Corpus, load_corpus
from bot.corpus.schema import PLACEHOLDER, Command, Entry, Family
from bot.engine import dense as dense_mod
from bot.engine.calibration import Calibrator, Features
from bot.engine.codes import CodeResolver, CodeSighting, describe_unlisted
from bot.engine.embedders import ONNX_DIR, Embedder, OnnxEmbedder, SentenceTransformerEmbedder
from bot.engine.fusion import DEFAULT_PARAMS, FusionParams, dense_evidence, fuse, lexical_evidence
from bot.engine.lexical import LexicalIndex
from bot.engine.families import FamilyDetector
from bot.engine.logfacts import LogFacts
from bot.engine.models import Answer, CodeOut, CommandOut, FamilyOut, Hit, MatchedLine, PlaceholderOut
from bot.engine.normalize import Prepared, prepare, reduce_to_focus
from bot.engine.placeholders import safe_value
from bot.engine.root import RootAnalysis, RootFinder, looks_pasted
from bot.engine.scope import ScopeFilter
from bot.engine.signatures import EntryMatch, LineMatch, SignatureIndex
from bot.engine.text import warm_up
from bot.environment.checker import check_environment
from bot.environment.models import EnvironmentReport
from bot.settings import Settings

log = logging.getLogger(__name__)

Retriever = Literal["hybrid", "signatures", "lexical", "dense"]
Lang = Literal["en", "zh"]
RETRIEVERS: tuple[Retriever, ...] = ("hybrid", "signatures", "lexical", "dense")
GENERIC_CODE_ENTRY = "mindie-error-code"  # answers codes that have no entry of their own
VERSION_FAMILY = "version-mismatch"  # named when the environment check finds versions that do not fit
CODE_WEIGHT = 0.95  # a recognised MindIE error code is nearly as good as a signature
STRONG_SIGNATURE = 0.8  # matches at least this strong count as distinct errors of their own
FOREIGN_PENALTY = 0.4  # confidence kept when the paste is plainly another stack's problem
GENERAL_PENALTY = 0.45  # confidence kept by a problem any system has, when nothing in the paste is Ascend's
EXPLAINED_AWAY = 0.5  # confidence kept by unrecognised candidates once a signature explains the error
SECONDARY_FLOOR = 0.5  # runners-up below this share of the threshold are noise, not candidates
CONSEQUENCE_CAP = 0.3  # signature evidence kept by an entry that sees only echoes of the root error
KNOWN_SIGNATURE = 0.5  # a signature at least this strong on a line of the paste recognises the error (0.3 = an echo)
UNRECOGNISED_SHARE = 0.99  # the highest confidence, as a share of the threshold, of an entry that does not know the pasted error
TRIAGE_SHARE = 0.995  # the same for a triage entry that recognised it: under the threshold, above the unrecognised ones


@dataclass
class DenseState:
    embedder: Embedder | None = None
    index: dense_mod.DenseIndex | None = None
    status: str = "disabled"
    notice: str | None = None


@dataclass
class Evidence:
    sig_matches: dict[str, EntryMatch]
    sightings: list[CodeSighting]
    signatures: np.ndarray
    lexical: np.ndarray
    dense: np.ndarray
    readable: float
    analysis: RootAnalysis
    on_root: np.ndarray  # 1 where the entry recognises the root line itself
    consequence_only: np.ndarray  # 1 where the entry matches only aftermath or wrapper text
    family: Family | None
    foreign: str | None  # the other stack this paste plainly belongs to, if any (corpus/scope.yaml)
    in_domain: bool  # the paste names something of MindIE / Ascend


@dataclass
class Scored:
    position: int
    confidence: float
    evidence: dict[str, float] = field(default_factory=dict)


class Engine:
    def __init__(self, corpus: Corpus, settings: Settings, dense: DenseState, params: FusionParams = DEFAULT_PARAMS,
                 calibrator: Calibrator | None = None):
        self.corpus = corpus
        self.settings = settings
        self.params = params
        self.entries: list[Entry] = corpus.entries
        self.position = {e.id: i for i, e in enumerate(self.entries)}
        self.signatures = SignatureIndex.from_corpus(corpus)
        self.lexical = LexicalIndex(self.entries)
        self.codes = CodeResolver(corpus)
        self.scope = ScopeFilter(corpus.scope)
        self.roots = RootFinder(corpus.aftermath)
        self.families = FamilyDetector(corpus.families)
        self.entry_family = np.array([e.family or "" for e in self.entries], dtype=object)
        self.general = np.array([e.scope == "general" for e in self.entries], dtype=bool)
        self.triage = np.array([e.triage for e in self.entries], dtype=bool)
        # The codes each entry is about, from its exact error strings: (system, code) pairs.
        self.entry_codes = [{(s.system, s.code) for s in self.codes.find(list(e.errors))} for e in self.entries]
        self.entry_code_systems = [{system for system, _ in codes} for codes in self.entry_codes]
        self.calibrator = calibrator if calibrator is not None else Calibrator.load()
        self.dense = dense
        warm_up()

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_settings(cls, settings: Settings, progress: bool = False, rebuild: bool = False) -> "Engine":
        """Load the corpus (CorpusError if invalid), the model and the index (rebuilt when stale)."""
        corpus = with_pack(load_corpus(settings.corpus_dir), settings.faultdiag_kg)
        dense = load_dense(corpus, settings, progress=progress, rebuild=rebuild)
        return cls(corpus, settings, dense)

    def status(self) -> dict:
        manifest = self.dense.index.manifest if self.dense.index else None
        return {
            "entries": len(self.entries),
            "signatures": len(self.signatures),
            "error_codes": len(self.corpus.codes) + sum(len(c.codes) for c in self.corpus.catalogues),
            "families": len(self.corpus.families),
            "corpus_hash": self.corpus.digest[:12],
            "model": self.settings.model,
            "dense": self.dense.status,
            "embedder": self.dense.embedder.backend if self.dense.embedder else None,
            "index": {"rows": manifest.rows, "dim": manifest.dim, "built_at": manifest.built_at} if manifest else None,
            "calibrated": self.calibrator.weights is not None,
        }

    # ---- answering ----------------------------------------------------------------------------
    def answer(self, text: str | bytes, top_k: int | None = None, retriever: Retriever = "hybrid", query_id: str | None = None,
               deadline: float | None = None, lang: Lang | None = None) -> Answer:
        """`deadline` (time.monotonic()) is a time budget: once it has passed when the text is prepared, the
        retrievers read only the lines that matter most (first error, final exception) and the answer says so.
        `lang` forces the reply language; by default it is the language of the user's own sentences."""
        top_k = top_k or self.settings.top_k
        prepared = prepare(text, self.settings.max_input_bytes)
        if deadline is not None and time.monotonic() > deadline:
            prepared = reduce_to_focus(prepared)
        notices = list(prepared.notices)
        if self.dense.notice and retriever in ("hybrid", "dense"):
            notices.append(self.dense.notice)
        reply_lang: Lang = lang or prepared.lang  # type: ignore[assignment]
        if not prepared.text.strip():
            return Answer(id=query_id, answered=False, lang=reply_lang, confidence=0.0, results=[],
                          notices=notices + ["empty input: paste an error, a log or a question"], retriever=retriever)

        use = {"signatures", "lexical", "dense"} if retriever == "hybrid" else {retriever}
        ev = self.evidence(prepared, use)
        fused = self.fused(ev, prepared, notices)
        # The calibration was fitted on the hybrid; a retriever alone is reported on its own fused score.
        confidence_of = self.calibrator.confidence(self.features(fused, ev, prepared)) if retriever == "hybrid" else fused
        pasted = _pasted(ev, prepared)  # read once: the gates below and the threshold all depend on it
        confidence_of = self._outside_ascend(confidence_of, ev, pasted, notices)
        if retriever == "hybrid":
            confidence_of = self._unrecognised(confidence_of, ev, pasted, notices)
            confidence_of = self._triage_only(confidence_of, pasted)
            confidence_of = self._foreign_only(confidence_of, ev)
            confidence_of = self._uncorroborated(confidence_of, ev, pasted)
            confidence_of = self._another_code(confidence_of, ev, pasted)
        order, distinct = self._order(confidence_of, ev.sig_matches)
        scored = [_scored(i, confidence_of, ev) for i in order[:top_k]]
        confidence = max((s.confidence for s in scored), default=0.0)
        # A typed question has only its words to go on, and a calibrated 0.40-0.45 on one was right on the development
        # FAQ-written sets (top-1 +0.5 to +4.7 points) without a new wrong answer on the development real sets.
        threshold = self.settings.threshold if pasted else self.settings.question_threshold
        answered = bool(scored) and confidence >= threshold
        if not answered and _only_aftermath(ev, prepared):
            notices.append("this only reports an earlier failure; paste the lines above it, where the first error is")
        lang = reply_lang
        facts = LogFacts(prepared.lines, prepared.error_lines, ev.sightings[0].code if ev.sightings else None)
        # Runners-up are shown with their own confidence, but not when they are barely evidence at all.
        floor = SECONDARY_FLOOR * threshold
        hits = [self._hit(s, ev.sig_matches, prepared, lang, facts, s.position in distinct)
                for n, s in enumerate(scored) if n == 0 or s.confidence >= floor] if answered else []
        root = ev.analysis.root
        # No MindIE triage for another stack's paste; the person's own words name a family only when the error
        # lines name none and the error is not recognised.
        environment = self.environment(prepared.text, answered)
        if ev.foreign and not answered:
            family = None
        else:
            family = ev.family or (None if answered else self.families.from_prose(prepared.lines) or self._mismatch_family(environment))
        closest = [int(i) for i in np.argsort(-confidence_of, kind="stable")[:3] if confidence_of[i] > 0.05]
        recognises = bool(closest) and pasted and self._recognises_symptom(closest[0], ev)
        if not answered and family is not None and not recognises:
            # The reply names the family and its first steps; its closest topics follow it, those of that family first.
            closest.sort(key=lambda i: self.entry_family[i] != family.id)
        suggestions = [] if answered else [self.entries[i].title.get(lang) for i in closest]
        # Not recognised, the closest entry is still worth a click: shown in full on request, labelled as a topic to
        # read, never as the diagnosis (its confidence stays what it is, under the threshold).
        nearest = recognised = None
        if not answered and closest and not ev.foreign:
            nearest = self._hit(_scored(closest[0], confidence_of, ev), ev.sig_matches, prepared, lang, facts)
            if recognises:
                recognised = nearest  # the renderers say it is a triage, not a diagnosis
        return Answer(
            id=query_id,
            answered=answered,
            lang=lang,
            confidence=round(confidence, 4),
            results=hits,
            suggestions=suggestions,
            closest=nearest,
            recognised=recognised,
            candidates=[self.entries[s.position].id for s in scored],
            error_codes=[self._code_out(s, lang) for s in ev.sightings],
            notices=notices,
            retriever=retriever,
            is_log=prepared.is_log,
            root=MatchedLine(line_no=root.line_no + 1, text=root.text[:500]) if root else None,
            family=self._family_out(family, lang, ev, facts) if family else None,
            environment=environment,
        )

    def _mismatch_family(self, environment: EnvironmentReport | None) -> Family | None:
        """Versions in the paste that the compatibility table says do not fit: the version-mismatch family is evident,
        even when no line names it."""
        if environment is None or not any(check.verdict == "mismatch" for check in environment.checks):
            return None
        return next((f for f in self.corpus.families if f.id == VERSION_FAMILY), None)

    def environment(self, text: str, answered: bool = False) -> EnvironmentReport | None:
        """The Environment section (bot/environment): versions, cards and packages in the paste against the
        compatibility table. An environment dump with no recognised error gets it as the whole answer."""
        try:
            report = check_environment(text, self.corpus.compat)
        except Exception:  # the environment check adds to an answer; it must never cost the diagnosis
            log.exception("environment_check_failed")
            return None
        if report is not None and report.only and answered:
            report = report.model_copy(update={"only": False})
        return report

    def evidence(self, prepared: Prepared, use: set[str]) -> "Evidence":
        """Each retriever's evidence for every entry, in [0, 1]; retrievers not in use give zeros."""
        n = len(self.entries)
        analysis = self.roots.analyse(prepared.lines, prepared.error_lines)
        sightings = self.codes.find(prepared.lines)
        sig_matches: dict[str, EntryMatch] = {}
        on_root = np.zeros(n, dtype=np.float32)
        consequence_only = np.zeros(n, dtype=np.float32)
        if "signatures" in use:
            sig_matches = self.signatures.match(prepared.lines, whole=prepared.text)
            self._add_code_matches(sig_matches, sightings)
            on_root, consequence_only = self._weigh_by_root(sig_matches, analysis, prepared.text)
        sig = np.zeros(n, dtype=np.float32)
        for entry_id, match in sig_matches.items():
            sig[self.position[entry_id]] = match.score
        root = analysis.root
        focus = prepared.focus_on_root(root.line_no, root.focus, analysis.consequences, analysis.causes) if root else prepared.focus
        lex = lexical_evidence(self.lexical.scores(focus), self.params) if "lexical" in use else np.zeros(n, dtype=np.float32)
        den = np.zeros(n, dtype=np.float32)
        readable = 0.0 if "dense" in use else 1.0  # no dense evidence: lexical speaks alone
        if "dense" in use and self.dense.index is not None:
            readable = self.dense.embedder.readability(focus)
            if readable > 0.0:  # trust the embedding only as far as the model could read the query
                den = dense_evidence(self.dense.index.scores(self.embed(focus)), self.params) * readable
        family = self.families.detect(prepared.lines, prepared.error_lines, analysis, sightings)
        in_domain, foreign = self.scope.classify(prepared.text)  # read once: fusion and calibration both use it
        return Evidence(sig_matches, sightings, sig, lex, den, readable, analysis, on_root, consequence_only, family,
                        foreign, in_domain)

    def _weigh_by_root(self, matches: dict[str, EntryMatch], analysis: RootAnalysis, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Which entries recognise the root line, and which only echoes of it; an entry that sees only echoes
        (aftermath lines, consequence signatures, the wrapper around a quoted cause) while an earlier root error
        is known keeps at most CONSEQUENCE_CAP of its signature evidence."""
        n = len(self.entries)
        on_root = np.zeros(n, dtype=np.float32)
        consequence_only = np.zeros(n, dtype=np.float32)
        cause_lines = sorted(analysis.causes)
        in_cause = self.signatures.match([analysis.causes[i] for i in cause_lines], numbers=cause_lines, whole=text) if cause_lines else {}
        root = analysis.root
        eligible: dict[str, list[LineMatch]] = {}
        for entry_id, match in matches.items():
            quoted = {lm.line_no for lm in in_cause[entry_id].lines} if entry_id in in_cause else set()
            eligible[entry_id] = [
                lm for lm in match.lines
                if lm.role == "root" and lm.line_no not in analysis.consequences
                and (lm.line_no not in analysis.causes or lm.line_no in quoted or lm.line_no in analysis.reasoned)
            ]
            if root is not None and any(lm.line_no == root.line_no for lm in eligible[entry_id]):
                on_root[self.position[entry_id]] = 1.0
        for entry_id, match in matches.items():
            if eligible[entry_id] or root is None:
                continue  # with no root error to blame, an echo is the best clue there is
            consequence_only[self.position[entry_id]] = 1.0
            match.score = min(match.score, CONSEQUENCE_CAP)
        return on_root, consequence_only

    def fused(self, ev: Evidence, prepared: Prepared, notices: list[str]) -> np.ndarray:
        """The retrievers' evidence fused, adjusted for what they cannot know."""
        return self._adjust(fuse(ev.signatures, ev.lexical, ev.dense, self.params, readable=ev.readable), ev.signatures, ev.foreign, notices)

    def features(self, fused: np.ndarray, ev: Evidence, prepared: Prepared) -> Features:
        n = len(fused)
        order = np.argsort(-fused, kind="stable")
        best, second = (float(fused[order[0]]), float(fused[order[1]])) if n > 1 else (float(fused.max(initial=0)), 0.0)
        margin = np.where(np.arange(n) == order[0], best - second, fused - best) if n else fused
        family_id = ev.family.id if ev.family else ""
        known = self.entry_family != ""
        agrees = (self.entry_family == family_id) & known if family_id else np.zeros(n, dtype=bool)
        differs = (self.entry_family != family_id) & known if family_id else np.zeros(n, dtype=bool)
        foreign = 1.0 if ev.foreign else 0.0
        has_root = ev.analysis.root is not None
        length = min(1.0, np.log1p(sum(1 for ln in prepared.lines if ln.strip())) / np.log(200))
        # INFO lines pasted under a question hold nothing a signature could recognise: the question's words carry it,
        # so the calibration for typed questions weighs them (FAQ sets +3, real dev sets +1 help, +1 mislead).
        log_model = float(prepared.is_log and (bool(prepared.error_lines) or float(ev.signatures.max(initial=0.0)) >= KNOWN_SIGNATURE))
        return Features.build(
            fused=fused, signature=ev.signatures, lexical=ev.lexical, dense=ev.dense, on_root=ev.on_root,
            family_agrees=agrees.astype(float), family_differs=differs.astype(float), margin=margin,
            is_log=np.full(n, log_model), consequence_only=ev.consequence_only, foreign=np.full(n, foreign),
            no_root_match=np.full(n, float(has_root and not ev.on_root.any())),
            # A long paste with many error lines is harder to pin on one entry than a short question.
            length=np.full(n, length),
            error_lines=np.full(n, min(1.0, np.log1p(len(prepared.error_lines)) / np.log(50))),
            # How far fused evidence and a signature hit can be trusted differs between a short question and a
            # long log, where generic lines match symptom-level entries.
            fused_x_length=fused * length,
            signature_x_log=ev.signatures * log_model,
        )

    def _adjust(self, fused: np.ndarray, sig: np.ndarray, foreign: str | None, notices: list[str]) -> np.ndarray:
        """What the retrievers cannot know: a recognised error explains away other candidates, and another
        stack's paste is not MindIE's problem."""
        strongest = float(sig.max(initial=0.0))
        recognised = strongest >= STRONG_SIGNATURE
        if recognised:
            fused = np.where(sig > 0.0, fused, fused * EXPLAINED_AWAY)
        # Only an unmistakable MindIE error outweighs a paste that is plainly about another stack: a broad one
        # ("curl: (7) ... Connection refused") is as likely the other stack's own, and so is an exact match on an
        # error every stack prints (`scope: general`: vLLM's KV-cache limit on an RTX 4090).
        ours = float(np.where(self.general, 0.0, sig).max(initial=0.0))
        if foreign and ours < 1.0:
            fused = fused * FOREIGN_PENALTY
            notices.append(f"this looks like a problem of {foreign}, not of MindIE or Ascend")
        return fused

    def _outside_ascend(self, confidence: np.ndarray, ev: "Evidence", pasted: bool, notices: list[str]) -> np.ndarray:
        """A problem any system has (a small /dev/shm, an extension built for another torch) is only ours to
        diagnose when the paste shows an Ascend setup; otherwise its entry is offered as a suggestion, not an answer.
        A typed question is asked in the channel about the asker's own (Ascend) setup; a log that shows no trace of
        Ascend may come from anywhere, and so may a single pasted error line."""
        if ev.in_domain or not pasted or not len(confidence) or not self.general.any():
            return confidence
        top = int(np.argmax(confidence))
        if self.general[top] and confidence[top] >= self.settings.threshold and not ev.foreign:
            notices.append("nothing in this paste points at Ascend, CANN or MindIE, and this error is not specific to them")
        return np.where(self.general, confidence * GENERAL_PENALTY, confidence)

    def _unrecognised(self, confidence: np.ndarray, ev: "Evidence", pasted: bool, notices: list[str]) -> np.ndarray:
        """A pasted error that no signature or code recognises is not recognised, however close an entry's prose is. On
        eight held-out sets, run on the code of their single measurement (275 reports), the answers that rested
        on prose alone while a pasted report held an error line were right 10 times and wrong 20 times; the
        reply names the family and offers those entries as closest topics instead. A typed one-line question
        ("the service fails to start, where are the logs?") is still answered from its words: on the FAQ-written
        sets that is right more than nine times in ten."""
        if not len(confidence) or ev.analysis.root is None or not pasted:
            return confidence
        known = ev.signatures >= KNOWN_SIGNATURE
        ceiling = UNRECOGNISED_SHARE * self.settings.threshold
        top = int(np.argmax(confidence))
        if not known[top] and confidence[top] >= self.settings.threshold:
            notices.append("no line of this paste matches an error the knowledge base knows; the closest topics are suggestions, not a diagnosis")
        highest = float(confidence[~known].max(initial=0.0))
        if highest < ceiling:
            return confidence
        return np.where(known, confidence, confidence * (ceiling / highest))  # order kept: they stay suggestions

    def _foreign_only(self, confidence: np.ndarray, ev: "Evidence") -> np.ndarray:
        """Text that plainly belongs to another stack (an RTX card, CUDA, Java...) and names nothing of Ascend is
        never diagnosed, however well an entry's error line fits: the advice may even be right, but it is not this
        channel's to give, and on another vendor's machine the next steps differ. The entries stay suggestions."""
        if not ev.foreign or not len(confidence):
            return confidence
        return np.minimum(confidence, UNRECOGNISED_SHARE * self.settings.question_threshold)

    def _uncorroborated(self, confidence: np.ndarray, ev: "Evidence", pasted: bool) -> np.ndarray:
        """A paste that no signature recognises, and that holds no error line to root on (an issue title, a
        description, a version list), has only its words to go on; when the lexical and the dense retriever pick
        different entries, the fused winner is a guess, offered as the first closest topic instead. Replayed on the
        code of their single measurement, the fourteen held-out sets had 21 such answers: 11 right, 10 wrong
        (`bench/replay_heldout.py` and the README); a wrong answer costs a channel more than a suggestion in place
        of a right one. Where both retrievers agree the words are evidence and it stays an answer; a typed question
        is answered from its words."""
        if not pasted or not len(confidence):
            return confidence
        top = int(np.argmax(confidence))
        if ev.signatures[top] > 0.0:
            return confidence
        dense_agrees = float(ev.dense[top]) > 0.0 and int(np.argmax(ev.dense)) == top
        if int(np.argmax(ev.lexical)) == top and dense_agrees:
            return confidence
        return np.minimum(confidence, UNRECOGNISED_SHARE * self.settings.threshold)

    def _another_code(self, confidence: np.ndarray, ev: "Evidence", pasted: bool) -> np.ndarray:
        """An entry about one error code (ACL 507018) that no signature matched is not the answer to a paste that
        shows another code of the same system (507035): its words match ("ACL stream synchronize failed, error code"),
        the error does not. It stays a suggestion."""
        if not pasted or not ev.sightings or not len(confidence):
            return confidence
        seen = {(s.system, s.code) for s in ev.sightings}
        systems = {system for system, _ in seen}
        other = np.array([ev.signatures[i] == 0.0 and bool(systems & self.entry_code_systems[i]) and codes.isdisjoint(seen)
                          for i, codes in enumerate(self.entry_codes)])
        return np.where(other, np.minimum(confidence, UNRECOGNISED_SHARE * self.settings.threshold), confidence)

    def _triage_only(self, confidence: np.ndarray, pasted: bool) -> np.ndarray:
        """An entry marked `triage` (an AI Core exception, a collective that timed out, a wrapper's return code)
        recognises the symptom, not its cause: on a pasted report it stays under the threshold, and the reply
        offers it as the recognised error's first steps (`recognised`). On the twelve development real sets this
        turned 10 confident answers to never-resolved threads into triage replies and cost 6 helps (of 294); the
        FAQ-written sets did not change. A typed one-line question about the error is answered as usual."""
        if not len(confidence) or not self.triage.any() or not pasted:
            return confidence
        return np.where(self.triage, np.minimum(confidence, TRIAGE_SHARE * self.settings.threshold), confidence)

    def _recognises_symptom(self, position: int, ev: "Evidence") -> bool:
        """Whether the nearest entry is a triage entry whose signature or code recognised a line of the paste."""
        return bool(self.triage[position]) and float(ev.signatures[position]) >= KNOWN_SIGNATURE

    def embed(self, text: str) -> np.ndarray:
        return self.dense.embedder.encode([text])[0]

    def _add_code_matches(self, matches: dict[str, EntryMatch], sightings: list[CodeSighting]) -> None:
        for sighting in sightings:
            # Listed MindIE LLM codes without an entry of their own go to the entry that explains any code;
            # other codes count only when a catalogue names the entry that fixes them.
            target = sighting.entry or (GENERIC_CODE_ENTRY if sighting.row is not None else None)
            if target is None or target not in self.position:
                continue
            em = matches.setdefault(target, EntryMatch(target))
            em.lines.append(LineMatch(sighting.line_no, CODE_WEIGHT, {"code": sighting.code}))
            em.score = max(em.score, CODE_WEIGHT)

    def _order(self, confidence: np.ndarray, sig_matches: dict[str, EntryMatch]) -> tuple[list[int], set[int]]:
        """Distinct errors recognised by strong signatures come first, in the order they occur in the log;
        everything else follows by confidence. Also returns those distinct errors' positions. An error the reply
        cannot answer with confidence (a triage entry on a paste) does not lead as one of them."""
        strong = [m for m in sig_matches.values()
                  if m.score >= STRONG_SIGNATURE and confidence[self.position[m.entry_id]] >= self.settings.threshold]
        strong.sort(key=lambda m: (-m.score, m.first_line))
        distinct: list[EntryMatch] = []
        claimed: set[int] = set()
        for m in strong:  # a weaker entry matching only lines a stronger one explains is the same error
            lines = {lm.line_no for lm in m.lines if lm.weight >= STRONG_SIGNATURE}
            if lines - claimed:
                distinct.append(m)
            claimed |= lines
        distinct.sort(key=lambda m: m.first_line)
        first = [self.position[m.entry_id] for m in distinct] if len(distinct) > 1 else []
        rest = [int(i) for i in np.argsort(-confidence, kind="stable") if int(i) not in first]
        return first + rest, set(first)

    def _hit(self, scored: Scored, sig_matches: dict[str, EntryMatch], prepared: Prepared, lang: str,
             facts: LogFacts, distinct: bool = False) -> Hit:
        entry = self.entries[scored.position]
        match = sig_matches.get(entry.id)
        captures = facts.fill_in(match.captures() if match else {}, _templates(entry.commands, lang) + list(entry.fix.get(lang)))
        lines = sorted({lm.line_no for lm in match.lines}) if match else []
        matched = [MatchedLine(line_no=i + 1, text=prepared.lines[i].strip()[:500]) for i in lines[:5]]
        commands = [self._command(c, captures, lang) for c in entry.commands]
        steps = [fill(step, captures) for step in entry.fix.get(lang)]  # "{model_path}" in a step gets the user's path too
        used = [name for name, value in scored.evidence.items() if value > 0.0]
        return Hit(
            id=entry.id,
            title=entry.title.get(lang),
            component=entry.component.value,
            score=round(scored.confidence, 4),
            confidence=round(scored.confidence, 4),
            symptom=entry.symptom.get(lang),
            cause=entry.cause.get(lang),
            fix="\n".join(f"{n}. {s}" for n, s in enumerate(steps, 1)),
            fix_steps=list(steps),
            commands=[c.run for c in commands],
            command_details=commands,
            matched=[m.text for m in matched],
            matched_lines=matched,
            retrievers=used,
            why=explain_ranking(scored.evidence, matched),
            source=entry.source,
            source_url=source_url(entry.source),
            distinct=distinct,
        )

    def _command(self, command: Command, captures: dict[str, str], lang: str) -> CommandOut:
        run = fill(command.run, captures)
        hints = self.corpus.placeholder_hints
        unfilled = [PlaceholderOut(name=name, hint=(hints.get(name) or {}).get(lang, ""))
                    for name in dict.fromkeys(PLACEHOLDER.findall(run))]
        return CommandOut(run=run, template=command.run, kind=command.kind, explain=fill(command.explain.get(lang), captures),
                          unfilled=unfilled)

    def _code_out(self, sighting: CodeSighting, lang: str) -> CodeOut:
        meaning = sighting.meaning(lang) or describe_unlisted(sighting).get(lang)
        return CodeOut(code=sighting.code, name=sighting.name(), group=sighting.module(lang), meaning=meaning,
                       entry=sighting.entry, system=sighting.system, family=sighting.family, listed=sighting.listed)

    def _family_out(self, family: Family, lang: str, ev: Evidence, facts: LogFacts) -> FamilyOut:
        captured: dict[str, str] = {}
        for match in ev.sig_matches.values():
            for key, value in match.captures().items():
                captured.setdefault(key, value)
        captures = facts.fill_in(captured, _templates(family.commands, lang))
        commands = [self._command(c, captures, lang) for c in family.commands]
        return FamilyOut(id=family.id, title=family.title.get(lang), summary=family.summary.get(lang),
                         triage=list(family.triage.get(lang)), commands=commands)


FAQ_URL = "https://github.com/Ascend/MindIE-LLM/blob/HEAD/docs/zh/faq/faq.md"
INSTALL_FAQ_URL = "https://github.com/Ascend/MindIE-LLM/tree/HEAD/docs/zh/user_guide/install/faq_and_appendixes"


def source_url(source: str) -> str | None:
    """The document a reply links to: an official document the source names, else the MindIE LLM FAQ for `faq#N`
    (questions 39-42 are the install FAQ), else the first thread it cites."""
    words = source.replace(";", " ").replace("(", " ").replace(")", " ").replace(",", " ").split()
    urls = [w.rstrip(".") for w in words if w.startswith("https://")]
    documents = [u for u in urls if "/issues/" not in u and "/pull/" not in u and "/discussions/" not in u]
    if documents:
        return documents[0]
    for word in words:
        if word.startswith("faq#"):
            number = word[4:]
            return INSTALL_FAQ_URL if number.isdigit() and int(number) >= 39 else FAQ_URL
    return urls[0] if urls else None


def _scored(position: int, confidence: np.ndarray, ev: Evidence) -> Scored:
    """One entry's confidence with each retriever's evidence for it (shown as "why" in the reply)."""
    i = int(position)
    return Scored(i, float(confidence[i]), {"signatures": float(ev.signatures[i]), "lexical": float(ev.lexical[i]),
                                            "dense": float(ev.dense[i])})


def _pasted(ev: Evidence, prepared: Prepared) -> bool:
    """Text pasted from a run (a log, a traceback, an error line, several lines) rather than a typed one-line
    question, with or without a root error line (a paste of aftermath lines alone has none)."""
    root = ev.analysis.root
    return ((root is not None and root.pasted) or prepared.is_log or _lines_at_least(prepared.lines, 2)
            or _only_aftermath(ev, prepared))


def _only_aftermath(ev: Evidence, prepared: Prepared) -> bool:
    """The paste is nothing but lines that report an earlier failure ("Engine core initialization failed. See root
    cause above"): a copied line, not a question, and the error itself is in the lines the person did not paste."""
    if ev.analysis.root is not None or not ev.analysis.consequences:
        return False
    # A typed question that quotes such a line ("what does 'TBE Subprocess ... disappeared' mean?") stays a question.
    return all(n in ev.analysis.consequences and looks_pasted(line) and "?" not in line and "？" not in line
               for n, line in enumerate(prepared.lines) if line.strip())


def _lines_at_least(lines: list[str], count: int) -> bool:
    """Whether at least `count` lines hold text (stops counting there: a pasted log can have a million lines)."""
    seen = 0
    for line in lines:
        if line.strip():
            seen += 1
            if seen >= count:
                return True
    return False


def _templates(commands: list[Command], lang: str) -> list[str]:
    """The texts of commands whose {placeholders} a reply fills: each command and its explanation."""
    return [c.run for c in commands] + [c.explain.get(lang) for c in commands]


def fill(template: str, captures: dict[str, str]) -> str:
    """Fill {placeholders} with values captured from the user's log; unknown ones, and captures that are not
    safe for their placeholder's type (a "path" holding `$(...)`), stay visible."""
    return PLACEHOLDER.sub(lambda m: safe_value(m.group(1), captures.get(m.group(1), "")) or m.group(0), template)


def explain_ranking(evidence: dict[str, float], matched: list[MatchedLine]) -> str:
    parts = []
    if evidence.get("signatures", 0) > 0:
        where = f" on line {matched[0].line_no}" if matched else ""
        parts.append(f"signature {evidence['signatures']:.2f}{where}")
    if evidence.get("lexical", 0) > 0:
        parts.append(f"lexical {evidence['lexical']:.2f}")
    if evidence.get("dense", 0) > 0:
        parts.append(f"dense {evidence['dense']:.2f}")
    return ", ".join(parts) or "no evidence"


def with_pack(corpus: Corpus, path: Path | None) -> Corpus:
    """Add a FaultDiag knowledge pack's entries; an unusable pack is reported and left out, never fatal."""
    if path is None:
        return corpus
    try:
        pack = load_faultdiag(path, taken=set(corpus.by_id))
    except FaultDiagError as exc:
        log.error("faultdiag_pack_refused reason=%s", exc)
        return corpus
    log.info("faultdiag_pack_loaded path=%s entries=%d skipped=%d", path, len(pack.entries), len(pack.skipped))
    return corpus.with_entries(pack.entries, f"faultdiag:{Path(path).name}", pack.digest)


def load_dense(corpus: Corpus, settings: Settings, progress: bool = False, rebuild: bool = False) -> DenseState:
    """Embedder and index. The fast ONNX export is used when the index folder has one for this model; otherwise
    the sentence-transformers model is loaded, exported, and the export used from then on. On any model failure the engine
    runs on signatures and lexical search and says so."""
    if not settings.dense_enabled:
        return DenseState(status="disabled by MINDIE_HELP_DENSE_ENABLED=false")
    started = time.perf_counter()
    embedder: Embedder | None = None if rebuild else OnnxEmbedder.load(settings.index_dir, settings.model)
    if embedder is None:
        try:
            embedder = SentenceTransformerEmbedder(dense_mod.resolve_model(settings.model))
        except Exception as exc:  # any loader failure (missing folder, bad weights, no network) degrades, never crashes
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            log.warning("dense_unavailable model=%s reason=%s", settings.model, reason)
            return DenseState(status=f"unavailable: {reason}",
                              notice=f"embedding model '{settings.model}' could not load; answering with signatures and lexical search only")
    if isinstance(embedder, SentenceTransformerEmbedder):
        # Export once and use the export from now on: it reproduces the model's vectors (checked), starts in a
        # fraction of the time, and builds an index in ~2/3 of sentence-transformers' time.
        try:
            embedder.export_onnx(settings.index_dir / ONNX_DIR, settings.model)
            embedder = OnnxEmbedder.load(settings.index_dir, settings.model) or embedder
        except Exception as exc:
            log.warning("onnx_export_skipped model=%s reason=%s", settings.model, f"{type(exc).__name__}: {str(exc)[:200]}")
    index, why = (None, "rebuild requested") if rebuild else dense_mod.load_index(settings.index_dir, corpus.entries, embedder, settings.model, corpus.digest)
    if index is None:
        log.info("index_build reason=%s dir=%s", why, settings.index_dir)
        index = dense_mod.build_index(corpus.entries, embedder, settings.model, corpus.digest, settings.index_dir, progress=progress)
        status = f"ready (index rebuilt: {why})"
    else:
        status = "ready"
    log.info("dense_ready model=%s backend=%s rows=%d seconds=%.2f", settings.model, embedder.backend, index.manifest.rows, time.perf_counter() - started)
    return DenseState(embedder=embedder, index=index, status=status)
