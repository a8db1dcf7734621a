//! `report --html`: a campaign's page, written after a real campaign on
//! examples/libfuzzer/journal.c (a property, a fault, a finding), then
//! loaded in headless Chromium: it loads, its table has a row per
//! property, and its screenshot is not blank. Without a browser on PATH
//! the browser half says so and is skipped, unless DST_REQUIRE_BROWSER=1
//! (.ci/run sets it, after installing Debian's chromium).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{driver, libfuzzer_harness, text};

fn browser() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join(name))
                    .find(|p| p.is_file())
            })
        })
}

/// Distinct byte values in a PNG's decompressed image data (a blank page
/// has two or three: the row filter and white).
fn distinct_pixel_bytes(png: &[u8]) -> usize {
    use std::io::Read;
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let mut at = 8;
    let mut idat = Vec::new();
    while at + 8 <= png.len() {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
        let kind = &png[at + 4..at + 8];
        if kind == b"IDAT" {
            idat.extend_from_slice(&png[at + 8..at + 8 + len]);
        }
        at += 12 + len;
    }
    let mut pixels = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut pixels)
        .expect("the image data inflates");
    let mut seen = [false; 256];
    for b in pixels {
        seen[b as usize] = true;
    }
    seen.iter().filter(|s| **s).count()
}

#[test]
fn the_html_report_of_a_campaign_renders_in_chromium() {
    let dir = std::env::temp_dir().join(format!("dst-html-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let journal = libfuzzer_harness(&dir, "journal");
    let harness = journal.to_str().unwrap();
    let run = driver(
        &dir,
        &[
            "run", "--cmd", "--defer", "--runs", "3000", "--seed", "1", "--quiet", "--", harness,
        ],
    );
    assert_eq!(run.status.code(), Some(1), "a finding: {}", text(&run));
    // AFL's formats beside the campaign.
    let stats = dir.join("campaigns/journal.stats");
    let plot = std::fs::read_to_string(stats.join("plot_data")).unwrap();
    assert!(
        plot.starts_with("# relative_time") && plot.lines().count() >= 2,
        "{plot}"
    );
    assert!(stats.join("fuzzer_stats").is_file());

    let page = dir.join("report.html");
    let report = driver(
        &dir,
        &[
            "report",
            "--json",
            "--html",
            page.to_str().unwrap(),
            "--cmd",
            "--defer",
            "--",
            harness,
        ],
    );
    assert_eq!(
        report.status.code(),
        Some(1),
        "a failing property: {}",
        text(&report)
    );
    let table: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let properties = table["properties"].as_array().unwrap().len();
    assert!(properties >= 1, "the assertion: {table}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches("<tr class=\"property").count(),
        properties,
        "{html}"
    );
    assert!(html.contains("every acknowledged write is on disk after a sync"));
    assert!(html.contains("class=\"finding"), "the finding is shown");
    assert!(html.contains("the write is lost"), "its fault is shown");
    assert!(html.contains("gdb --args"), "how to debug it");
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "self-contained"
    );
    // A second report: the finding is known now, not new.
    let again = driver(
        &dir,
        &[
            "report",
            "--html",
            page.to_str().unwrap(),
            "--cmd",
            "--defer",
            "--",
            harness,
        ],
    );
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    let html_again = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(">new<"), "{html}");
    assert!(
        html_again.contains(">known<") && !html_again.contains(">new<"),
        "{html_again}"
    );

    let Some(chromium) = browser() else {
        assert!(
            std::env::var_os("DST_REQUIRE_BROWSER").is_none(),
            "DST_REQUIRE_BROWSER is set but no chromium is on PATH"
        );
        eprintln!("skipped the browser half: no chromium on PATH (apt-get install chromium)");
        return;
    };
    let url = format!("file://{}", page.display());
    let headless = |extra: &[&str]| {
        Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .arg(format!(
                "--user-data-dir={}",
                dir.join("chromium-profile").display()
            ))
            .args(extra)
            .arg(&url)
            .output()
            .expect("chromium runs")
    };
    let dom = headless(&["--dump-dom"]);
    assert!(dom.status.success(), "{}", text(&dom));
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    assert!(dom_text.contains("</html>"), "the page loaded: {dom_text}");
    assert_eq!(
        dom_text.matches("<tr class=\"property").count(),
        properties,
        "a row per property in the loaded page"
    );
    let shot = dir.join("report.png");
    let screenshot = headless(&[
        &format!("--screenshot={}", shot.display()),
        "--window-size=1200,1600",
    ]);
    assert!(screenshot.status.success(), "{}", text(&screenshot));
    let png = std::fs::read(&shot).expect("a screenshot");
    let distinct = distinct_pixel_bytes(&png);
    assert!(
        distinct > 16,
        "the screenshot is not blank: {distinct} distinct bytes"
    );
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}
