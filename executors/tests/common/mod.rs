//! Shared by the executors' test crates.

/// A pseudo-random input of `len` bytes for `seed` (its first eight bytes
/// are the stream's seed, so the tail is random too): the same inputs in
/// every run of the tests.
pub fn input(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// Builds the Go program `source` for riscv64 with Go (static, no cgo)
/// as `name`; `None` (saying so) without `go`, unless `DST_REQUIRE_GO`
/// is set (CI installs Debian's golang-go and sets it).
#[allow(dead_code)] // not every test crate builds Go
pub fn build_go(source: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let program = tmp.join(format!("go-{name}-{}", std::process::id()));
    let built = std::process::Command::new("go")
        .args(["build", "-o"])
        .arg(&program)
        .arg(source)
        .env("CGO_ENABLED", "0")
        .env("GOARCH", "riscv64")
        .env("GOOS", "linux")
        .env("GOCACHE", tmp.join("go-cache"))
        .env("GOPATH", tmp.join("go-path"))
        .env("GO111MODULE", "off")
        .status();
    match built {
        Ok(status) => {
            assert!(status.success(), "go build {} failed", source.display());
            Some(program)
        }
        Err(_) => {
            assert!(
                std::env::var_os("DST_REQUIRE_GO").is_none(),
                "DST_REQUIRE_GO is set but go is not installed"
            );
            eprintln!("skipped: go is not installed (Debian: golang-go)");
            None
        }
    }
}

/// Whether rustc has the riscv64gc-unknown-linux-gnu target (saying so
/// when not); its absence fails when `DST_REQUIRE_RISCV_RUST` is set.
#[allow(dead_code)] // not every test crate builds Rust for riscv64
pub fn rust_target_installed() -> bool {
    let target = "riscv64gc-unknown-linux-gnu";
    let installed = std::process::Command::new("rustc")
        .args(["--print", "target-libdir", "--target", target])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .is_some_and(|dir| dir.is_dir());
    if !installed {
        assert!(
            std::env::var_os("DST_REQUIRE_RISCV_RUST").is_none(),
            "DST_REQUIRE_RISCV_RUST is set but the {target} target is not installed"
        );
        eprintln!(
            "skipped: the {target} Rust target is not installed (rustup target add {target})"
        );
    }
    installed
}

/// Builds the crate of `manifest` (its own workspace and lock file) for
/// static riscv64 Linux with Debian's cross linker, in one target folder
/// the test crates share (tokio is built once); the program `binary`.
#[allow(dead_code)] // not every test crate builds Rust for riscv64
pub fn build_riscv_rust(manifest: &std::path::Path, binary: &str) -> std::path::PathBuf {
    let target = "riscv64gc-unknown-linux-gnu";
    let target_dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tokio");
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "-q", "--release", "--locked", "--target", target])
        .arg("--manifest-path")
        .arg(manifest)
        .env("CARGO_TARGET_DIR", &target_dir)
        .env(
            "RUSTFLAGS",
            "-C target-feature=+crt-static -C linker=riscv64-linux-gnu-gcc",
        )
        .status()
        .unwrap();
    assert!(status.success(), "building {} failed", manifest.display());
    target_dir.join(target).join("release").join(binary)
}
