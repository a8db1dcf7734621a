//! Campaign bookkeeping: property status, novelty, save and resume.

use dst_executors::{Executor, InProcess};
use dst_kernel::campaign::CampaignError;
use dst_kernel::{Campaign, Status};

fn target() {
    let x = dst::random::below(4);
    dst::assert_always!(x != 3, "x is never 3");
    dst::assert_sometimes!(x == 2, "x is sometimes 2");
    dst::assert_always_or_unreachable!(x < 4, "x is in range");
    dst::assert_sometimes_greater_than!(x, 10, "x exceeds 10");
    if x > 100 {
        dst::assert_sometimes!(true, "a sometimes never reached");
        dst::assert_reachable!("a reachable never reached");
        dst::assert_unreachable!("an unreachable never reached");
    }
}

fn input(x: u8) -> Vec<u8> {
    vec![0, 0, 0, 0, 0, 0, 0, 0, x]
}

#[test]
fn statuses_follow_the_runs() {
    let mut exec = InProcess::new(target);
    let mut campaign = Campaign::new(exec.catalog().to_vec());
    let status = |c: &Campaign, m: &str| c.properties[m].status();
    assert_eq!(status(&campaign, "x is never 3"), Status::Unfound);

    let first = campaign.observe(&input(0), &exec.run(&input(0)));
    assert!(first.first_hit.contains(&"x is never 3".to_string()));
    assert!(first.better_guidance.contains(&"x exceeds 10".to_string()));
    assert_eq!(status(&campaign, "x is never 3"), Status::Passing);
    assert_eq!(status(&campaign, "x is sometimes 2"), Status::Failing);
    assert_eq!(
        status(&campaign, "a sometimes never reached"),
        Status::Unfound
    );
    assert_eq!(
        status(&campaign, "a reachable never reached"),
        Status::Unfound
    );
    assert_eq!(
        status(&campaign, "an unreachable never reached"),
        Status::Passing
    );

    let again = campaign.observe(&input(0), &exec.run(&input(0)));
    assert!(
        !again.is_interesting(),
        "the same run adds nothing: {again:?}"
    );

    let two = campaign.observe(&input(2), &exec.run(&input(2)));
    assert_eq!(two.first_example, vec!["x is sometimes 2".to_string()]);
    assert_eq!(two.better_guidance, vec!["x exceeds 10".to_string()]);
    assert_eq!(status(&campaign, "x is sometimes 2"), Status::Passing);

    let three = campaign.observe(&input(3), &exec.run(&input(3)));
    assert_eq!(three.first_counterexample, vec!["x is never 3".to_string()]);
    let p = &campaign.properties["x is never 3"];
    assert_eq!(p.status(), Status::Failing);
    assert_eq!(p.first_counterexample.as_deref(), Some(&input(3)[..]));
    assert_eq!(p.hit_runs, 4);
    assert_eq!(campaign.executions, 4);
    assert_eq!(campaign.corpus.len(), 3);
    assert_eq!(campaign.properties["x exceeds 10"].best_guidance, Some(7.0));
}

#[test]
fn a_campaign_saves_and_resumes() {
    let dir = std::env::temp_dir().join(format!("dst-campaign-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("campaign.json");
    let mut exec = InProcess::new(target);
    let mut campaign = Campaign::new(exec.catalog().to_vec());
    for x in 0..4 {
        campaign.observe(&input(x), &exec.run(&input(x)));
    }
    campaign.save(&path).unwrap();
    let loaded = Campaign::load(&path).unwrap();
    assert_eq!(loaded, campaign);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary file left behind");

    std::fs::write(&path, b"{\"version\": 1, \"executions\": ").unwrap();
    let err = Campaign::load(&path).unwrap_err();
    assert!(matches!(err, CampaignError::Corrupt { .. }));
    assert!(err.to_string().contains("is corrupt"));

    std::fs::write(&path, b"{\"version\": 99}").unwrap();
    let err = Campaign::load(&path).unwrap_err();
    assert!(err.to_string().contains("format version 99"), "{err}");

    let missing = Campaign::load(&dir.join("missing.json")).unwrap_err();
    assert!(matches!(missing, CampaignError::Read { .. }));
}

#[test]
fn campaigns_merge() {
    let mut exec = InProcess::new(target);
    let mut a = Campaign::new(exec.catalog().to_vec());
    let mut b = Campaign::new(exec.catalog().to_vec());
    a.observe(&input(0), &exec.run(&input(0)));
    b.observe(&input(2), &exec.run(&input(2)));
    b.observe(&input(3), &exec.run(&input(3)));
    a.merge(&b);
    assert_eq!(a.executions, 3);
    let never3 = &a.properties["x is never 3"];
    assert_eq!(never3.hit_runs, 3);
    assert_eq!(never3.status(), Status::Failing);
    assert_eq!(never3.first_counterexample.as_deref(), Some(&input(3)[..]));
    assert_eq!(a.properties["x is sometimes 2"].status(), Status::Passing);
    assert_eq!(a.properties["x exceeds 10"].best_guidance, Some(7.0));
}
