"""snapshotter/cli/diff_render.py: ``diff --stat`` laid out as git lays it out, and colours.

The expected ``--stat`` texts are git 2.39's (``git diff --stat=N``) for the
same change.
"""

from __future__ import annotations

from snapshotter.cli import diff_render
from snapshotter.cli.diff_render import NEW, OLD, RESET, patch_text, stat_text
from snapshotter.engine import FileDiff

LONG = "very/long/directory/name/that/goes/on/and/on/for/ever/file.txt"
DIFFS = [
    FileDiff("bin.dat", "modified", True, 0, 0, 2, 5),
    FileDiff("gone.txt", "deleted", False, 0, 1, 5, None),
    FileDiff("new.txt", "added", False, 1, 0, None, 4),
    FileDiff("short.txt", "modified", False, 2, 1, 6, 8),
    FileDiff(LONG, "modified", False, 75, 25, 141, 392),
]


def test_stat_at_80_columns_is_gits() -> None:
    assert stat_text(DIFFS).decode() == (
        " bin.dat                                            | Bin 2 -> 5 bytes\n"
        " gone.txt                                           |   1 -\n"
        " new.txt                                            |   1 +\n"
        " short.txt                                          |   3 +-\n"
        " .../name/that/goes/on/and/on/for/ever/file.txt     | 100 +++++++++++++++------\n"
        " 5 files changed, 78 insertions(+), 27 deletions(-)\n"
    )


def test_stat_at_40_columns_is_gits() -> None:
    assert stat_text(DIFFS, width=40).decode() == (
        " bin.dat                   | Bin 2 -> 5 bytes\n"
        " gone.txt                  |   1 -\n"
        " new.txt                   |   1 +\n"
        " short.txt                 |   3 +-\n"
        " .../on/for/ever/file.txt  | 100 ++++--\n"
        " 5 files changed, 78 insertions(+), 27 deletions(-)\n"
    )


def test_stat_colours_the_counts_as_git_does() -> None:
    lines = stat_text(DIFFS, color=True).decode().splitlines()
    assert lines[0].endswith(
        f"| Bin {OLD.decode()}2{RESET.decode()} -> {NEW.decode()}5\x1b[m bytes"
    )
    assert lines[3].endswith("|   3 \x1b[32m+\x1b[m\x1b[31m-\x1b[m")
    assert lines[-1] == " 5 files changed, 78 insertions(+), 27 deletions(-)"


def test_a_graph_wider_than_three_eighths_of_the_width_is_scaled_down() -> None:
    middle = FileDiff(LONG.replace("file", "mid"), "modified", False, 20, 5, 21, 100)
    assert stat_text([middle]).decode() == (
        " .../name/that/goes/on/and/on/for/ever/mid.txt      | 25 +++++++++++++++++-----\n"
        " 1 file changed, 20 insertions(+), 5 deletions(-)\n"
    )


def test_the_summary_leaves_out_a_zero_count_unless_both_are() -> None:
    assert stat_text([DIFFS[2]]).endswith(b" 1 file changed, 1 insertion(+)\n")
    assert stat_text([DIFFS[1]]).endswith(b" 1 file changed, 1 deletion(-)\n")
    empty = FileDiff("e", "added", False, 0, 0, None, 0)
    assert stat_text([empty]).decode() == (
        " e | 0\n 1 file changed, 0 insertions(+), 0 deletions(-)\n"
    )
    assert stat_text([]) == b""


def test_wide_characters_take_two_columns() -> None:
    wide = FileDiff("日本.txt", "added", False, 1, 0, None, 2)
    narrow = FileDiff("abcd.txt", "added", False, 1, 0, None, 2)
    assert stat_text([wide, narrow]).decode().splitlines()[:2] == [
        " 日本.txt | 1 +",
        " abcd.txt | 1 +",
    ]


PATCH = (
    b"diff --git a/short.txt b/short.txt\n"
    b"index de98044..a7bc997 100644\n"
    b"--- a/short.txt\n"
    b"+++ b/short.txt\n"
    b"@@ -1,3 +1,4 @@ context\n"
    b" a\n"
    b"-b\n"
    b"+B\n"
)
BINARY = (
    b"diff --git a/bin.dat b/bin.dat\n"
    b"index bdc955b..85025d9 100644\n"
    b"Binary files a/bin.dat and b/bin.dat differ\n"
)


def test_patches_are_joined_plain_unless_colour_is_asked() -> None:
    diffs = [
        FileDiff("short.txt", "modified", False, 1, 1, 6, 6, [PATCH]),
        FileDiff("bin.dat", "modified", True, 0, 0, 2, 5, [BINARY]),
    ]
    assert patch_text(diffs) == PATCH + BINARY
    coloured = patch_text(diffs, color=True).split(b"\n")
    assert coloured[0] == b"\x1b[1mdiff --git a/short.txt b/short.txt\x1b[m"
    assert coloured[3] == b"\x1b[1m+++ b/short.txt\x1b[m", "a header, not an added line"
    assert coloured[4] == b"\x1b[36m@@ -1,3 +1,4 @@\x1b[m context"
    assert coloured[5:8] == [b" a", b"\x1b[31m-b\x1b[m", b"\x1b[32m+B\x1b[m"]
    assert coloured[10] == b"Binary files a/bin.dat and b/bin.dat differ", "left plain"


def test_json_of_a_file_has_null_counts_for_a_binary_one() -> None:
    assert diff_render.file_json(DIFFS[0]) == {
        "path": "bin.dat",
        "status": "modified",
        "binary": True,
        "added": None,
        "removed": None,
        "old_size": 2,
        "new_size": 5,
    }
    assert diff_render.file_json(DIFFS[1])["removed"] == 1
