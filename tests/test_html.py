"""leaderboard.html in a real headless Chromium (Debian's, driven by Playwright):
it loads from disk with no console error and no network request, sorting
reorders rows, a filter hides rows, a task's chart renders. Screenshots are
kept in ``test-artifacts/``."""

import shutil
from pathlib import Path

import pytest

from lengthbench.benchmark.store import ResultsFolder
from lengthbench.leaderboard.build import build_leaderboard

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
BROWSER_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update"]


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.fail("no Chromium here: install it (Debian: apt-get install chromium), as the README's test command does")


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for the module's pages."""
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=BROWSER_FLAGS)
        yield browser
        browser.close()


def open_page(browser, path: Path, viewport=(1400, 900)):
    """``path`` in a new tab; returns (page, console errors, non-file requests)."""
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
    errors, requests = [], []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.on("request", lambda req: requests.append(req.url) if not req.url.startswith("file:") else None)
    page.goto(path.as_uri())
    page.wait_for_selector("#board tbody tr")
    return page, errors, requests


@pytest.fixture(scope="module")
def page_of_quick(browser, tmp_path_factory):
    """The quick reference leaderboard's page, open in headless Chromium; yields
    (page, board, console errors, network requests)."""
    out = tmp_path_factory.mktemp("html")
    board, paths = build_leaderboard(ResultsFolder(ROOT / "leaderboard/reference/quick/records").records(), out)
    page, errors, requests = open_page(browser, paths["html"])
    yield page, board, errors, requests
    page.close()


def rows(page) -> list[tuple[str, str]]:
    return [(tr.get_attribute("data-task"), tr.get_attribute("data-method"))
            for tr in page.query_selector_all("#board tbody tr")]


def column(page, key: str) -> list[float | None]:
    """The column's numbers in row order; None for an empty (n/a) cell."""
    texts = [c.inner_text().split("±")[0].strip() for c in page.query_selector_all(f"#board tbody td[data-key='{key}']")]
    return [float(t) if t and t != "n/a" else None for t in texts]


def sorted_with_blanks_last(values, reverse=False) -> bool:
    numbers = [v for v in values if v is not None]
    return numbers == sorted(numbers, reverse=reverse) and values == numbers + [None] * (len(values) - len(numbers))


@pytest.mark.slow
def test_the_page_loads_every_row_with_no_error_and_no_network(page_of_quick):
    page, board, errors, requests = page_of_quick
    assert len(rows(page)) == len(board) == 20
    assert page.inner_text("#shown") == "20 of 20 rows shown"
    cell = page.query_selector("#board tbody tr[data-task='copy'][data-method='transformer/nope'] "
                               "td[data-key='ood_exact_match_mean']").inner_text()
    nope = board[(board.task == "copy") & (board.method == "transformer/nope")].iloc[0]
    assert cell.startswith(f"{100 * nope.ood_exact_match_mean:.1f}")
    page.check("#columns input[value='chance_token_accuracy']")  # a column shown on asking
    for metric in ("exact_match", "token_accuracy"):  # beside the scores, the chance levels, with no ± of their own
        chance = page.query_selector("#board tbody tr[data-task='copy'][data-method='transformer/nope'] "
                                     f"td[data-key='chance_{metric}']").inner_text()
        assert chance == f"{100 * nope[f'chance_{metric}']:.1f}"
    page.uncheck("#columns input[value='chance_token_accuracy']")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "leaderboard.png"), full_page=True)
    assert errors == [] and requests == []


def test_a_not_applicable_cell_says_n_a_in_every_number_column(page_of_quick):
    page, board, *_ = page_of_quick
    [na] = board[board.status == "not_applicable"][["task", "method"]].itertuples(index=False)
    cells = page.query_selector_all(f"#board tbody tr[data-task='{na.task}'][data-method='{na.method}'] td.num")
    assert len(cells) > 5 and {c.inner_text() for c in cells} == {"n/a"}


def test_sorting_by_a_column_reorders_the_rows(page_of_quick):
    page, *_ = page_of_quick
    before = rows(page)
    page.click("#board th[data-key='ood_exact_match_mean']")
    values = column(page, "ood_exact_match_mean")
    assert sorted_with_blanks_last(values, reverse=True) and rows(page) != before
    assert page.get_attribute("#board th[data-key='ood_exact_match_mean']", "aria-sort") == "descending"
    page.click("#board th[data-key='ood_exact_match_mean']")
    ascending = column(page, "ood_exact_match_mean")
    assert sorted_with_blanks_last(ascending) and ascending != values
    page.click("#board th[data-key='rank']")


def test_a_filter_hides_rows(page_of_quick):
    page, board, *_ = page_of_quick
    page.uncheck("input[data-filter='level'][value='R']")
    shown = rows(page)
    assert len(shown) == (board.level != "R").sum() < len(board)
    assert not any(task == "parity_check" for task, _ in shown)
    page.uncheck("input[data-filter='family'][value='rotary']")
    assert not any(method == "transformer/rope" for _, method in rows(page))
    page.check("input[data-filter='level'][value='R']")
    page.check("input[data-filter='family'][value='rotary']")
    assert len(rows(page)) == len(board)


def test_a_tasks_chart_opens_from_the_table(page_of_quick):
    page, board, errors, _ = page_of_quick
    page.click("#board tbody tr[data-task='reverse_string'] button.task")
    assert page.is_visible("#chart-dialog")
    assert page.inner_text("#chart-title") == "reverse_string"
    lines = page.query_selector_all("#chart svg polyline.mean-line")
    methods = board[(board.task == "reverse_string") & (board.status == "ok")].method
    assert sorted(line.get_attribute("data-method") for line in lines) == sorted(methods)
    assert all(len(line.get_attribute("points").split()) == 16 for line in lines)  # lengths 1..16
    assert len(page.query_selector_all("#chart svg polygon.seed-range")) == len(lines)
    assert page.query_selector("#chart svg line.train-length") is not None
    # the bands are drawn and named: quick trains 1..8, chooses on 9..10, tests 11..16
    assert page.query_selector("#chart svg rect.validation-band") is not None
    assert [t.text_content() for t in page.query_selector_all("#chart svg text.band-label")] == ["train", "validation",
                                                                                             "test"]
    page.screenshot(path=str(ARTIFACTS / "leaderboard-chart.png"))
    page.select_option("#chart-metric", "token_accuracy")
    assert len(page.query_selector_all("#chart svg polyline.mean-line")) == len(lines)
    page.click("#chart-close")
    assert not page.is_visible("#chart-dialog") and errors == []


def test_a_page_of_cells_that_never_finished_still_works(browser, tmp_path):
    """Only n/a cells: the table shows them, the chart says there is nothing to draw, no error."""
    records = [r for r in ResultsFolder(ROOT / "leaderboard/reference/quick/records").records() if r.status == "not_applicable"]
    board, paths = build_leaderboard(records, tmp_path)
    assert len(board) == 1 and "png" not in paths
    page, errors, requests = open_page(browser, paths["html"])
    assert rows(page) == [("parity_check", "transformer/coupled")]
    page.click("#board tbody button.task")
    assert "No finished run" in page.inner_text("#chart")
    assert errors == [] and requests == []


@pytest.mark.slow
def test_the_diagram_of_many_methods_keeps_every_label_whole_and_apart(browser, tmp_path):
    """19 ranked encodings: the page's fixed 230 px margin cut the longest labels at its
    left edge, and a fixed 300 px axis crowds the tick labels as methods are added."""
    from test_leaderboard import fake_record

    from lengthbench.models.encodings import encoding_names

    encodings = [e for e in encoding_names() if e not in ("coupled", "abacus")][:19]
    records = [fake_record(task, encoding, 0, [1, 1, (i * 7 + j * 3) % 10 / 10, (i * 5 + j) % 10 / 10], train_length=2)
               for j, task in enumerate(("copy", "reverse_string", "parity_check", "even_pairs"))
               for i, encoding in enumerate(encodings)]
    _, paths = build_leaderboard(records, tmp_path)
    page, errors, _ = open_page(browser, paths["html"])
    svg = page.query_selector("#cd svg").bounding_box()
    labels = [el.bounding_box() for el in page.query_selector_all("#cd text.cd-label")]
    ticks = [el.bounding_box() for el in page.query_selector_all("#cd text.cd-tick")]
    assert len(labels) == len(ticks) == len(encodings) and errors == []
    for box in labels + ticks:
        assert svg["x"] <= box["x"] and box["x"] + box["width"] <= svg["x"] + svg["width"]
    for a, b in zip(ticks, ticks[1:]):
        assert a["x"] + a["width"] < b["x"]
    page.close()


def test_the_page_draws_the_critical_difference_diagram(page_of_quick, browser, tmp_path):
    """Every ranked method sits on the rank axis in rank order, with its groups; a
    page with nothing to rank keeps the section hidden."""
    from lengthbench.leaderboard.ranking import board_ranking

    page, board, errors, _ = page_of_quick
    ranking = board_ranking(board)
    methods = [el.get_attribute("data-method") for el in page.query_selector_all("#cd polyline.cd-method")]
    assert methods == list(ranking.average_ranks.index) and page.is_visible("#ranking")
    xs = [float(el.get_attribute("points").split(",")[0]) for el in page.query_selector_all("#cd polyline.cd-method")]
    assert xs == sorted(xs)  # the best rank at the left
    assert len(page.query_selector_all("#cd line.cd-group")) == len(ranking.groups())
    assert "transformer/coupled" in page.inner_text("#ranking-note") and errors == []
    records = [r for r in ResultsFolder(ROOT / "leaderboard/reference/quick/records").records() if r.task == "copy"]
    _, paths = build_leaderboard(records, tmp_path)  # one task: nothing to rank
    lone, lone_errors, _ = open_page(browser, paths["html"])
    assert not lone.is_visible("#ranking") and lone_errors == []
    lone.close()


@pytest.mark.slow
def test_the_full_references_page_fits_a_1366_pixel_screen(browser):
    """The widest shipped board (every task x 26 methods) on a common laptop
    width: the page never scrolls sideways, and the columns a verdict reads
    fit without the table scrolling either (all 20 did not); every other
    column is one tick away, and then the table scrolls in its own box."""
    page, errors, _ = open_page(browser, ROOT / "leaderboard/reference/full/leaderboard.html", viewport=(1366, 768))
    right = "document.querySelector('{}').getBoundingClientRect().right"
    try:
        assert errors == []
        assert page.evaluate("document.documentElement.scrollWidth") <= 1366
        table, box = page.evaluate(right.format("#board")), page.evaluate(right.format("#board-wrap"))
        assert box <= 1366 and table <= box
        shown = page.eval_on_selector_all("#board thead th", "ths => ths.map(th => th.dataset.key)")
        assert "rank" in shown and "ood_exact_match_mean" in shown and "n_parameters" not in shown
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "full-1366.png"))
        for box_ in page.query_selector_all("#columns input"):
            box_.check()
        assert page.eval_on_selector_all("#board thead th", "ths => ths.length") == 20
        assert page.query_selector("#board tbody td[data-key='n_parameters']").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= 1366 and page.evaluate(
            "getComputedStyle(document.querySelector('#board-wrap')).overflowX") == "auto"
    finally:
        page.close()


@pytest.mark.slow
def test_a_fractional_number_is_shown_rounded(browser, tmp_path):
    """Mean steps and average ranks are fractions: one decimal, never 583.3333333333334."""
    from lengthbench.benchmark.reading import of_preset

    records = ResultsFolder(ROOT / "leaderboard/reference/full/records").records()
    _, paths = build_leaderboard(of_preset(records, "nope", "full"), tmp_path)
    page, _, _ = open_page(browser, paths["html"])
    try:
        texts = [c.inner_text() for key in ("steps_mean", "rank") for c in page.query_selector_all(
            f"#board tbody td[data-key='{key}']")]
    finally:
        page.close()
    assert any("." in t for t in texts) and all(len(t.partition(".")[2]) <= 1 for t in texts), texts


def test_the_page_rounds_as_the_tables_do_and_spells_the_levels_out(page_of_quick):
    """An exact tie (6.25 %) is 6.2 on the page as in leaderboard.md (Python rounds half to even; JavaScript's
    toFixed rounded it up to 6.3); the level filter says what R, DCF and CS stand for."""
    page, *_ = page_of_quick
    values = [0.0625, 0.0675, 0.00125, 0.0035, 1 / 3, 0.5, 0.995, -0.0625, 0.0]
    shown = page.evaluate(f"{values}.map(pct)")
    assert shown == [f"{100 * v:.1f}" for v in values]
    labels = [label.inner_text().strip() for label in page.query_selector_all("#filter-level label")]
    assert "R (regular)" in labels and "DCF (deterministic context-free)" in labels


def test_a_submissions_page_marks_the_submitted_method(browser, tmp_path):
    from lengthbench.benchmark.records import length_frame
    from lengthbench.leaderboard.aggregate import leaderboard_frame
    from lengthbench.leaderboard.html import write_html

    records = ResultsFolder(ROOT / "leaderboard/reference/quick/records").records()
    path = write_html(leaderboard_frame(records), length_frame(records), tmp_path / "s.html", "submission",
                      submitted=["transformer/alibi"])
    page, errors, _ = open_page(browser, path)
    try:
        marked = {tr.get_attribute("data-method") for tr in page.query_selector_all("#board tbody tr.submitted")}
        background = page.evaluate("getComputedStyle(document.querySelector('tr.submitted td')).backgroundColor")
    finally:
        page.close()
    assert marked == {"transformer/alibi"} and background != "rgba(0, 0, 0, 0)" and errors == []
