"""A small pytest suite that bwrapkit's workload tests run inside the sandbox."""


def words(text):
    return [w for w in text.split() if w]


def test_words():
    assert words("a  b c") == ["a", "b", "c"]


def test_tmp_path(tmp_path):
    (tmp_path / "f").write_text("x")
    assert (tmp_path / "f").read_text() == "x"
