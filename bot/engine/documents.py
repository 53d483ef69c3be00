"""What each retriever reads of an entry."""

from __future__ import annotations

from bot.corpus.schema import Entry


def lexical_document(entry: Entry) -> str:
    """Both languages' text, errors, keywords and commands: BM25 weighs each occurrence."""
    parts = [
        entry.title.en, entry.title.zh, entry.title.en, entry.title.zh,  # titles count double
        entry.symptom.en, entry.symptom.zh, entry.cause.en, entry.cause.zh,
        *entry.fix.en, *entry.fix.zh,
        *entry.errors, *entry.keywords, *entry.keywords,
        *entry.questions.en, *entry.questions.zh,
        *(c.run for c in entry.commands),
    ]
    return "\n".join(parts)


def dense_texts(entry: Entry) -> list[str]:
    """Several short texts per entry; an entry's dense score is its best text's score."""
    texts = [
        entry.title.en,
        entry.title.zh,
        f"{entry.title.en}. {entry.symptom.en}",
        entry.symptom.zh,
        f"{entry.cause.en}",
        *entry.errors,
        *entry.questions.en,
        *entry.questions.zh,
    ]
    seen: set[str] = set()
    return [t for t in texts if t and not (t in seen or seen.add(t))]
