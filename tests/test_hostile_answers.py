"""Answers with quotes, markup, backslashes, non-ASCII text or code are data, never code.

Every generated XML, TOML, YAML and JSON file still parses, and the values read back equal
what was typed (surrounding spaces trimmed).
"""

from __future__ import annotations

import pytest

HOSTILE_NAMES = {
    "double quote": 'The "Best" Digits',
    "single quote": "Jane's digits",
    "ampersand and markup": "Digits & <Friends> </configuration>",
    "backslash": "C:\\Users\\digits\\",
    "chinese": "手写数字识别",
    "accented": "Reconnaissance de chiffres écrits à la main",
    "spaces around": "   Spacey digits   ",
}
INJECTION = "x'''); import pathlib; pathlib.Path('INJECTED').write_text('pwned'); ('"


def structured_files(baked):
    """Configuration files; tests/data holds sample reports, one of them deliberately not JSON."""
    return sorted(
        f
        for f in baked.files()
        if f.endswith((".xml", ".toml", ".yml", ".yaml", ".json"))
        and not f.startswith("tests/data/")
    )


@pytest.mark.parametrize("name", HOSTILE_NAMES.values(), ids=HOSTILE_NAMES.keys())
def test_hostile_project_name_round_trips_through_every_config_file(bake, name):
    baked = bake(
        project_name=name,
        description=name,
        author_name=name.replace(",", ""),
        ide="both",
        project_slug="hostile-digits",
    )
    assert baked.ok, baked.output

    for relative in structured_files(baked):
        parse = {".xml": baked.xml, ".toml": baked.toml, ".json": baked.json}.get(
            "." + relative.rsplit(".", 1)[-1], baked.yaml
        )
        parse(relative)  # raises if the file no longer parses

    expected = name.strip()
    project = baked.toml("pyproject.toml")["project"]
    assert project["description"] == expected
    assert project["authors"][0]["name"] == expected
    settings = baked.json(f"src/{baked.package}/machinery/project.json")
    assert settings["project_name"] == expected
    assert baked.json(".cookiecutter.json")["cookiecutter"]["project_name"] == name
    assert expected in baked.read("README.md")


def test_chinese_name_gives_a_usable_slug_and_package(bake):
    baked = bake(project_name="手写数字识别")

    assert baked.ok, baked.output
    assert baked.path.name == "shou-xie-shu-zi-shi-bie"
    assert baked.package == "shou_xie_shu_zi_shi_bie"
    assert (baked.path / "src" / "shou_xie_shu_zi_shi_bie" / "__init__.py").is_file()


@pytest.mark.parametrize("question", ["project_name", "description", "author_name", "author_email"])
def test_injection_payload_in_an_answer_is_never_executed(bake, question, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    payload = INJECTION.replace(",", "") if question == "author_name" else INJECTION
    answers = {question: payload, "project_slug": "injection-test"}
    if question == "author_email":
        answers[question] = "a@b.c" + payload

    baked = bake(**answers)

    assert not list(tmp_path.rglob("INJECTED"))
    if baked.ok:
        assert not list(baked.path.rglob("INJECTED"))
