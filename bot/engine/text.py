"""Tokenisation shared by the lexical retriever: Chinese segmentation, technical tokens kept whole."""

from __future__ import annotations

import logging
import re

import jieba

jieba.setLogLevel(logging.WARNING)

# A technical token: identifiers with _ . - : / inside (GLOO_SOCKET_IFNAME, max_input_length,
# libboost_thread.so.1.82.0, atb_llm.runner, MIE05E01000A) stays one token; its parts are added too.
_TECH = re.compile(r"[A-Za-z0-9_]+(?:[._:\-/][A-Za-z0-9_]+)*")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_SPLIT = re.compile(r"[._:\-/]+|(?<=[a-z])(?=[A-Z])")

STOPWORDS = frozenset(
    """a an and are as at be by can do does for from how i in is it me my of on or so that the this to was
    what when where which why with you your we our it's im i'm get got any there have has just not no
    的 了 是 在 和 就 都 也 吗 呢 啊 吧 我 你 他 这 那 个 有 怎么 什么 如何 为什么 一下 一个 时候 请问 问题 回事 怎么回事 怎么办 办 报 出现 提示""".split()
)


def tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    for run in _CJK_RUN.findall(text):
        tokens.extend(w for w in jieba.lcut_for_search(run) if w not in STOPWORDS)
    for found in _TECH.findall(_CJK_RUN.sub(" ", text)):
        whole = found.lower()
        if len(whole) < 2 and not whole.isdigit():
            continue
        if whole not in STOPWORDS:
            tokens.append(whole)
        parts = [p.lower() for p in _SPLIT.split(found) if p]
        if len(parts) > 1:
            tokens.extend(p for p in parts if len(p) > 1 and p not in STOPWORDS)
    return tokens


def warm_up() -> None:
    """Load jieba's dictionary now rather than on the first user's query."""
    jieba.initialize()
