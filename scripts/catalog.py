"""The page's and e-mails' message catalogs: extract the strings, merge them into the .po files,
and check that every string has a translation.

    .venv/bin/python scripts/catalog.py update   # new strings into locale/*/LC_MESSAGES/messages.po
    .venv/bin/python scripts/catalog.py check    # exit 1 naming any string without a translation

The catalogs are read with Babel at run time (``signoff._i18n``): there is no compile step.
"""

from __future__ import annotations

import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "signoff"
LOCALES = PACKAGE / "locale"
METHODS = [
    ("web/templates/**.html", "jinja2"),
    ("web/_render.py", "python"),
    ("notify/_email.py", "python"),
]
OPTIONS = {"web/templates/**.html": {"extensions": "jinja2.ext.i18n"}}
KEYWORDS = {"_": None, "gettext": None, "ngettext": (1, 2), "N_": None, "_gettext": None}


def extracted() -> Catalog:
    catalog = Catalog(project="signoff", charset="utf-8")
    found = extract_from_dir(
        PACKAGE, METHODS, options_map=OPTIONS, keywords=KEYWORDS, comment_tags=("NOTE:",)
    )
    for filename, lineno, message, comments, context in found:
        catalog.add(message, None, [(filename, lineno)], auto_comments=comments, context=context)
    return catalog


def po_files() -> list[Path]:
    return sorted(LOCALES.glob("*/LC_MESSAGES/messages.po"))


def update() -> None:
    template = extracted()
    for path in po_files():
        with path.open("rb") as source:
            catalog = read_po(source, locale=path.parts[-3])
        catalog.update(template, no_fuzzy_matching=True)
        with path.open("wb") as target:
            write_po(target, catalog, width=100, omit_header=False, sort_output=True)
        print(f"updated {path.relative_to(ROOT)}")


def missing() -> dict[str, list[str]]:
    """locale → messages used in the code with no translation in its catalog."""
    template = extracted()
    gaps: dict[str, list[str]] = {}
    for path in po_files():
        with path.open("rb") as source:
            catalog = read_po(source, locale=path.parts[-3])
        for message in template:
            if not message.id:
                continue
            entry = catalog.get(message.id)
            strings = (
                []
                if entry is None
                else (list(entry.string) if isinstance(entry.string, tuple) else [entry.string])
            )
            if entry is None or entry.fuzzy or not all(strings):
                key = message.id if isinstance(message.id, str) else message.id[0]
                gaps.setdefault(path.parts[-3], []).append(key)
    return gaps


def main(argv: list[str]) -> int:
    if argv[1:] == ["update"]:
        update()
        return 0
    if argv[1:] == ["check"]:
        gaps = missing()
        for locale, messages in gaps.items():
            for message in messages:
                print(f"{locale}: no translation for {message!r}")
        if not gaps:
            print("every message has a translation in every catalog")
        return 1 if gaps else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
