//! `make install PREFIX=…` installs libdst, dst.h and dst.pc; a C program
//! builds against the install with pkg-config (shared) or with libdst.a.

use std::path::Path;
use std::process::Command;

#[test]
fn make_install_then_pkg_config() {
    let sdk_c = Path::new(env!("CARGO_MANIFEST_DIR"));
    let prefix = std::env::temp_dir().join(format!("dst-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&prefix);
    let status = Command::new("make")
        .args(["-s", "-C"])
        .arg(sdk_c)
        .arg("install")
        .arg(format!("PREFIX={}", prefix.display()))
        .env("CARGO", env!("CARGO"))
        .status()
        .expect("run make");
    assert!(status.success());
    for file in [
        "lib/libdst.so",
        "lib/libdst.a",
        "include/dst.h",
        "lib/pkgconfig/dst.pc",
    ] {
        assert!(prefix.join(file).exists(), "{file} is installed");
    }

    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "dst"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .expect("run pkg-config");
    assert!(flags.status.success());
    let flags = String::from_utf8(flags.stdout).unwrap();
    let source = sdk_c.join("tests/c/basic.c");

    let shared = prefix.join("basic-shared");
    let status = Command::new("cc")
        .arg("-o")
        .arg(&shared)
        .arg(&source)
        .args(flags.split_whitespace())
        .status()
        .unwrap();
    assert!(
        status.success(),
        "builds with `pkg-config --cflags --libs dst`"
    );

    let fixed = prefix.join("basic-static");
    let status = Command::new("cc")
        .arg("-o")
        .arg(&fixed)
        .arg(&source)
        .arg(format!("-I{}", prefix.join("include").display()))
        .arg(prefix.join("lib/libdst.a"))
        .args(["-lpthread", "-ldl", "-lm"])
        .status()
        .unwrap();
    assert!(status.success(), "links statically with libdst.a");

    let outputs: Vec<Vec<u8>> = [shared, fixed]
        .iter()
        .map(|binary| {
            let output = Command::new(binary).env("DST_SEED", "11").output().unwrap();
            assert!(output.status.success());
            output.stdout
        })
        .collect();
    assert_eq!(
        outputs[0], outputs[1],
        "the same seed, the same run, however linked"
    );
}
