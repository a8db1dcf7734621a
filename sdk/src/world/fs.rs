//! A node's file system: directories and files whose data and names are
//! volatile until synced, as the crash-consistency checkers (ALICE,
//! CrashMonkey) model a POSIX file system.
//!
//! Every inode keeps two states: what reads see now, and what survives a
//! crash. A file's writes and truncations since its last sync
//! (`fsync`/`fdatasync`) are a list of operations; a directory's creates,
//! unlinks and renames since its last sync (`fsync` of the directory) are
//! another. A crash ([`Fs::crash`]) keeps a decided part of what is
//! volatile: a prefix of each file's unsynced operations (a decision of
//! `0..=n`, nominally 0: none) and each unsynced name operation kept or
//! lost (a decision each, nominally lost). So the nominal crash keeps only
//! what was synced, and the explorer can reach every state a real file
//! system may leave: a renamed file whose data never reached the disk
//! (empty), a create that is lost, the first half of an append. What is
//! no longer named from the root after a crash is gone.
//!
//! File contents are shared until written (`Arc`), so a snapshot of the
//! file system, cloned at every run, copies no bytes.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Decide;

/// An inode number.
pub type Ino = u64;
/// The root directory.
pub const ROOT: Ino = 1;

/// Why an operation failed (the kernel maps each to its errno).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// ENOENT.
    NotFound,
    /// EEXIST.
    Exists,
    /// ENOTDIR.
    NotDir,
    /// EISDIR.
    IsDir,
    /// ENOTEMPTY.
    NotEmpty,
    /// EINVAL (a directory moved under itself, an empty name).
    Invalid,
}

/// One change to a file's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    Write(u64, Vec<u8>),
    Truncate(u64),
}

/// One change to a directory's names.
#[derive(Clone, Debug, PartialEq, Eq)]
enum NameOp {
    Link(String, Ino),
    Unlink(String),
    /// A rename within the directory: kept or lost whole (the target
    /// names the old inode or the new one, never neither).
    Rename(String, String, Ino),
}

#[derive(Clone, Debug)]
struct Inode {
    dir: bool,
    mode: u32,
    /// A file's bytes: now, and as the disk holds them.
    data: Arc<Vec<u8>>,
    durable: Arc<Vec<u8>>,
    unsynced: Vec<Op>,
    /// A directory's names: now, and as the disk holds them.
    entries: BTreeMap<String, Ino>,
    durable_entries: BTreeMap<String, Ino>,
    pending: Vec<NameOp>,
    /// The directory holding this one (a directory has one name).
    parent: Ino,
    /// Names pointing here now.
    links: u32,
    /// Virtual nanoseconds of the last change.
    pub mtime: u64,
}

impl Inode {
    fn new(dir: bool, mode: u32, parent: Ino) -> Inode {
        Inode {
            dir,
            mode,
            data: Arc::default(),
            durable: Arc::default(),
            unsynced: Vec::new(),
            entries: BTreeMap::new(),
            durable_entries: BTreeMap::new(),
            pending: Vec::new(),
            parent,
            links: 0,
            mtime: 0,
        }
    }
}

/// What [`Fs::stat`] tells of an inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    pub ino: Ino,
    pub dir: bool,
    pub mode: u32,
    pub size: u64,
    pub links: u32,
    pub mtime: u64,
}

/// A file system: inodes by number, the root first.
#[derive(Clone, Debug)]
pub struct Fs {
    inodes: BTreeMap<Ino, Inode>,
    next: Ino,
}

impl Default for Fs {
    fn default() -> Fs {
        let mut root = Inode::new(true, 0o755, ROOT);
        root.links = 1;
        Fs {
            inodes: BTreeMap::from([(ROOT, root)]),
            next: ROOT + 1,
        }
    }
}

fn apply(data: &mut Vec<u8>, op: &Op) {
    match op {
        Op::Write(offset, bytes) => {
            let end = *offset as usize + bytes.len();
            if data.len() < end {
                data.resize(end, 0);
            }
            data[*offset as usize..end].copy_from_slice(bytes);
        }
        Op::Truncate(len) => data.resize(*len as usize, 0),
    }
}

fn apply_name(entries: &mut BTreeMap<String, Ino>, op: &NameOp) {
    match op {
        NameOp::Link(name, ino) => {
            entries.insert(name.clone(), *ino);
        }
        NameOp::Unlink(name) => {
            entries.remove(name);
        }
        NameOp::Rename(from, to, ino) => {
            entries.remove(from);
            entries.insert(to.clone(), *ino);
        }
    }
}

impl Fs {
    fn inode(&self, ino: Ino) -> Result<&Inode, Error> {
        self.inodes.get(&ino).ok_or(Error::NotFound)
    }

    fn inode_mut(&mut self, ino: Ino) -> Result<&mut Inode, Error> {
        self.inodes.get_mut(&ino).ok_or(Error::NotFound)
    }

    fn dir(&self, ino: Ino) -> Result<&Inode, Error> {
        let inode = self.inode(ino)?;
        if inode.dir {
            Ok(inode)
        } else {
            Err(Error::NotDir)
        }
    }

    /// The inode `path` names, from directory `at` for a relative path.
    pub fn resolve(&self, at: Ino, path: &str) -> Result<Ino, Error> {
        let mut ino = if path.starts_with('/') { ROOT } else { at };
        for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
            let dir = self.dir(ino)?;
            ino = if part == ".." {
                dir.parent
            } else {
                *dir.entries.get(part).ok_or(Error::NotFound)?
            };
        }
        Ok(ino)
    }

    /// The directory that holds `path`'s last component, and that name.
    pub fn parent_of(&self, at: Ino, path: &str) -> Result<(Ino, String), Error> {
        let trimmed = path.trim_end_matches('/');
        let (dir, name) = match trimmed.rfind('/') {
            Some(0) => ("/", &trimmed[1..]),
            Some(i) => (&trimmed[..i], &trimmed[i + 1..]),
            None => (".", trimmed),
        };
        if name.is_empty() || name == "." || name == ".." {
            return Err(Error::Invalid);
        }
        let dir = self.resolve(at, dir)?;
        self.dir(dir)?;
        Ok((dir, name.to_string()))
    }

    /// What `ino` is.
    pub fn stat(&self, ino: Ino) -> Result<Stat, Error> {
        let inode = self.inode(ino)?;
        Ok(Stat {
            ino,
            dir: inode.dir,
            mode: inode.mode,
            size: if inode.dir {
                4096
            } else {
                inode.data.len() as u64
            },
            links: inode.links + u32::from(inode.dir),
            mtime: inode.mtime,
        })
    }

    /// The names in directory `ino`, in order, with their inodes.
    pub fn entries(&self, ino: Ino) -> Result<Vec<(String, Ino, bool)>, Error> {
        let dir = self.dir(ino)?;
        Ok(dir
            .entries
            .iter()
            .map(|(name, &i)| (name.clone(), i, self.inodes.get(&i).is_some_and(|n| n.dir)))
            .collect())
    }

    /// The parent of directory `ino`.
    pub fn parent(&self, ino: Ino) -> Result<Ino, Error> {
        Ok(self.dir(ino)?.parent)
    }

    /// Creates `name` in directory `dir` (a directory with `dir_kind`);
    /// the name is volatile until `dir` is synced, a file's (empty) data
    /// until it is.
    pub fn create(
        &mut self,
        dir: Ino,
        name: &str,
        dir_kind: bool,
        mode: u32,
        now: u64,
    ) -> Result<Ino, Error> {
        if self.dir(dir)?.entries.contains_key(name) {
            return Err(Error::Exists);
        }
        let ino = self.next;
        self.next += 1;
        let mut inode = Inode::new(dir_kind, mode & 0o7777, dir);
        inode.mtime = now;
        self.inodes.insert(ino, inode);
        self.link(dir, name, ino, now);
        Ok(ino)
    }

    fn link(&mut self, dir: Ino, name: &str, ino: Ino, now: u64) {
        let d = self.inodes.get_mut(&dir).expect("a live directory");
        d.entries.insert(name.to_string(), ino);
        d.pending.push(NameOp::Link(name.to_string(), ino));
        d.mtime = now;
        let inode = self.inodes.get_mut(&ino).expect("a live inode");
        inode.links += 1;
        if inode.dir {
            inode.parent = dir;
        }
    }

    fn unlink_name(&mut self, dir: Ino, name: &str, now: u64) -> Option<Ino> {
        let d = self.inodes.get_mut(&dir)?;
        let ino = d.entries.remove(name)?;
        d.pending.push(NameOp::Unlink(name.to_string()));
        d.mtime = now;
        if let Some(inode) = self.inodes.get_mut(&ino) {
            inode.links = inode.links.saturating_sub(1);
        }
        Some(ino)
    }

    /// Removes `name` from `dir`: a file, or with `want_dir` an empty
    /// directory (`unlinkat`, `rmdir`). An open file keeps its inode.
    pub fn unlink(&mut self, dir: Ino, name: &str, want_dir: bool, now: u64) -> Result<(), Error> {
        let ino = *self.dir(dir)?.entries.get(name).ok_or(Error::NotFound)?;
        let inode = self.inode(ino)?;
        match (want_dir, inode.dir) {
            (true, false) => return Err(Error::NotDir),
            (false, true) => return Err(Error::IsDir),
            (true, true) if !inode.entries.is_empty() => return Err(Error::NotEmpty),
            _ => {}
        }
        self.unlink_name(dir, name, now);
        Ok(())
    }

    /// Renames `from` in `from_dir` to `to` in `to_dir`, replacing a file
    /// (or an empty directory) there: two name operations, each volatile
    /// until its directory is synced.
    pub fn rename(
        &mut self,
        from_dir: Ino,
        from: &str,
        to_dir: Ino,
        to: &str,
        now: u64,
    ) -> Result<(), Error> {
        let ino = *self
            .dir(from_dir)?
            .entries
            .get(from)
            .ok_or(Error::NotFound)?;
        self.dir(to_dir)?;
        if from_dir == to_dir && from == to {
            return Ok(());
        }
        let moving_dir = self.inode(ino)?.dir;
        if moving_dir {
            // Not under itself.
            let mut at = to_dir;
            loop {
                if at == ino {
                    return Err(Error::Invalid);
                }
                if at == ROOT {
                    break;
                }
                at = self.inode(at)?.parent;
            }
        }
        if let Some(&there) = self.dir(to_dir)?.entries.get(to) {
            let target = self.inode(there)?;
            match (moving_dir, target.dir) {
                (false, true) => return Err(Error::IsDir),
                (true, false) => return Err(Error::NotDir),
                (true, true) if !target.entries.is_empty() => return Err(Error::NotEmpty),
                _ => {}
            }
            if from_dir != to_dir {
                self.unlink_name(to_dir, to, now);
            }
        }
        if from_dir == to_dir {
            // One operation, atomic across a crash.
            let d = self.inodes.get_mut(&from_dir).expect("a live directory");
            d.entries.remove(from);
            let replaced = d.entries.insert(to.to_string(), ino);
            d.pending
                .push(NameOp::Rename(from.to_string(), to.to_string(), ino));
            d.mtime = now;
            if let Some(old) = replaced.and_then(|old| self.inodes.get_mut(&old)) {
                old.links = old.links.saturating_sub(1);
            }
            return Ok(());
        }
        self.unlink_name(from_dir, from, now);
        self.link(to_dir, to, ino, now);
        Ok(())
    }

    /// Bytes of file `ino` from `offset`, at most `len`.
    pub fn read(&self, ino: Ino, offset: u64, len: usize) -> Result<&[u8], Error> {
        let inode = self.inode(ino)?;
        if inode.dir {
            return Err(Error::IsDir);
        }
        let start = (offset as usize).min(inode.data.len());
        let end = start.saturating_add(len).min(inode.data.len());
        Ok(&inode.data[start..end])
    }

    /// Writes `bytes` at `offset` of file `ino` (a gap reads as zeros):
    /// volatile until the file is synced.
    pub fn write(&mut self, ino: Ino, offset: u64, bytes: &[u8], now: u64) -> Result<(), Error> {
        let inode = self.inode_mut(ino)?;
        if inode.dir {
            return Err(Error::IsDir);
        }
        let op = Op::Write(offset, bytes.to_vec());
        apply(Arc::make_mut(&mut inode.data), &op);
        inode.unsynced.push(op);
        inode.mtime = now;
        Ok(())
    }

    /// Sets the length of file `ino`: volatile until it is synced.
    pub fn truncate(&mut self, ino: Ino, len: u64, now: u64) -> Result<(), Error> {
        let inode = self.inode_mut(ino)?;
        if inode.dir {
            return Err(Error::IsDir);
        }
        let op = Op::Truncate(len);
        apply(Arc::make_mut(&mut inode.data), &op);
        inode.unsynced.push(op);
        inode.mtime = now;
        Ok(())
    }

    /// `fsync` of `ino`: a file's bytes, or a directory's names, become
    /// durable.
    pub fn sync(&mut self, ino: Ino) -> Result<(), Error> {
        let inode = self.inode_mut(ino)?;
        if inode.dir {
            inode.durable_entries = inode.entries.clone();
            inode.pending.clear();
        } else {
            inode.durable = inode.data.clone();
            inode.unsynced.clear();
        }
        Ok(())
    }

    /// `sync`: everything becomes durable.
    pub fn sync_all(&mut self) {
        let all: Vec<Ino> = self.inodes.keys().copied().collect();
        for ino in all {
            let _ = self.sync(ino);
        }
    }

    /// Whether anything is volatile (a crash would decide something).
    pub fn has_volatile(&self) -> bool {
        self.inodes
            .values()
            .any(|i| !i.unsynced.is_empty() || !i.pending.is_empty())
    }

    /// What a crash leaves: per file with unsynced operations (in inode
    /// order) a decided prefix of them, per directory each unsynced name
    /// operation kept or lost; then only what the root still names.
    pub fn crash(&mut self, decide: &mut impl Decide) {
        for inode in self.inodes.values_mut() {
            if !inode.unsynced.is_empty() {
                let n = inode.unsynced.len() as u64;
                let keep = decide.below("world fs: unsynced writes kept", n + 1) as usize;
                debug_assert!(keep <= inode.unsynced.len());
                if keep > 0 {
                    let durable = Arc::make_mut(&mut inode.durable);
                    for op in &inode.unsynced[..keep] {
                        apply(durable, op);
                    }
                }
                inode.unsynced.clear();
            }
            for op in std::mem::take(&mut inode.pending) {
                if decide.bool("world fs: name operation kept") {
                    apply_name(&mut inode.durable_entries, &op);
                }
            }
            inode.data = inode.durable.clone();
            inode.entries = inode.durable_entries.clone();
        }
        // What the root names, and each directory's one parent.
        let mut reachable = BTreeMap::from([(ROOT, ROOT)]);
        let mut work = vec![ROOT];
        let mut links: BTreeMap<Ino, u32> = BTreeMap::from([(ROOT, 1)]);
        while let Some(dir) = work.pop() {
            let names: Vec<Ino> = self.inodes[&dir].entries.values().copied().collect();
            for ino in names {
                let Some(inode) = self.inodes.get(&ino) else {
                    continue;
                };
                *links.entry(ino).or_default() += 1;
                if reachable.contains_key(&ino) {
                    continue;
                }
                reachable.insert(ino, dir);
                if inode.dir {
                    work.push(ino);
                }
            }
        }
        self.inodes.retain(|ino, _| reachable.contains_key(ino));
        for (ino, inode) in self.inodes.iter_mut() {
            // A directory kept under two names (a rename half kept) is
            // still one directory; its first name in the walk wins.
            inode.parent = reachable[ino];
            inode.links = links.get(ino).copied().unwrap_or(0);
            let dead: Vec<String> = inode
                .entries
                .iter()
                .filter(|(_, i)| !reachable.contains_key(i))
                .map(|(n, _)| n.clone())
                .collect();
            for name in dead {
                inode.entries.remove(&name);
                inode.durable_entries.remove(&name);
            }
        }
        debug_assert!(
            !self.has_volatile(),
            "a crash leaves only the durable state"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values from a script (all-zero once it runs out): the nominal crash.
    #[derive(Default)]
    struct Script(Vec<u64>);

    impl Decide for Script {
        fn fault(&mut self, _fault: super::super::Fault) -> bool {
            false
        }
        fn below(&mut self, _site: &'static str, n: u64) -> u64 {
            if self.0.is_empty() {
                0
            } else {
                self.0.remove(0) % n
            }
        }
        fn bool(&mut self, _site: &'static str) -> bool {
            !self.0.is_empty() && self.0.remove(0) == 1
        }
    }

    fn file(fs: &Fs, path: &str) -> Option<Vec<u8>> {
        let ino = fs.resolve(ROOT, path).ok()?;
        Some(fs.read(ino, 0, usize::MAX).ok()?.to_vec())
    }

    #[test]
    fn the_nominal_crash_keeps_only_what_was_synced() {
        let mut fs = Fs::default();
        let data = fs.create(ROOT, "data", true, 0o755, 0).unwrap();
        fs.sync(ROOT).unwrap();
        let log = fs.create(data, "log", false, 0o644, 0).unwrap();
        fs.write(log, 0, b"one", 0).unwrap();
        fs.sync(log).unwrap();
        fs.sync(data).unwrap();
        fs.write(log, 3, b" two", 0).unwrap();
        fs.create(data, "new", false, 0o644, 0).unwrap();
        assert_eq!(file(&fs, "/data/log").unwrap(), b"one two");
        let mut crashed = fs.clone();
        crashed.crash(&mut Script::default());
        assert_eq!(file(&crashed, "/data/log").unwrap(), b"one");
        assert_eq!(crashed.resolve(ROOT, "data/new"), Err(Error::NotFound));
        assert!(!crashed.has_volatile());
        // A decided crash keeps the unsynced write, and the create.
        let mut kept = fs.clone();
        kept.crash(&mut Script(vec![1, 1]));
        assert_eq!(file(&kept, "/data/log").unwrap(), b"one two");
        assert_eq!(file(&kept, "/data/new").unwrap(), b"");
    }

    #[test]
    fn a_rename_whose_data_was_never_synced_leaves_an_empty_file() {
        // The classic bug: write tmp, rename over the old file, sync the
        // directory but not tmp's data.
        let mut fs = Fs::default();
        let old = fs.create(ROOT, "config", false, 0o644, 0).unwrap();
        fs.write(old, 0, b"v1", 0).unwrap();
        fs.sync(old).unwrap();
        fs.sync(ROOT).unwrap();
        let tmp = fs.create(ROOT, "config.tmp", false, 0o644, 0).unwrap();
        fs.write(tmp, 0, b"v2", 0).unwrap();
        fs.rename(ROOT, "config.tmp", ROOT, "config", 0).unwrap();
        fs.sync(ROOT).unwrap();
        assert_eq!(file(&fs, "config").unwrap(), b"v2");
        let mut crashed = fs.clone();
        crashed.crash(&mut Script::default());
        assert_eq!(
            file(&crashed, "config").unwrap(),
            b"",
            "the name is durable, the data not"
        );
        assert_eq!(crashed.resolve(ROOT, "config.tmp"), Err(Error::NotFound));
        // Had tmp been synced first, v2 survives.
        let mut fs2 = fs.clone();
        fs2.sync(tmp).unwrap();
        fs2.crash(&mut Script::default());
        assert_eq!(file(&fs2, "config").unwrap(), b"v2");
    }

    #[test]
    fn a_rename_within_a_directory_is_kept_or_lost_whole() {
        let mut fs = Fs::default();
        let old = fs.create(ROOT, "config", false, 0o644, 0).unwrap();
        fs.write(old, 0, b"v1", 0).unwrap();
        fs.sync(old).unwrap();
        fs.sync(ROOT).unwrap();
        let tmp = fs.create(ROOT, "config.tmp", false, 0o644, 0).unwrap();
        fs.write(tmp, 0, b"v2", 0).unwrap();
        fs.sync(tmp).unwrap();
        fs.rename(ROOT, "config.tmp", ROOT, "config", 0).unwrap();
        // Two name operations are volatile (the create, the rename): in
        // every combination the crash keeps, config is v1 or v2.
        for (create, rename, expect) in [(0, 0, b"v1"), (1, 0, b"v1"), (0, 1, b"v2"), (1, 1, b"v2")]
        {
            let mut crashed = fs.clone();
            crashed.crash(&mut Script(vec![create, rename]));
            assert_eq!(
                file(&crashed, "config").unwrap(),
                expect,
                "{create} {rename}"
            );
            assert_eq!(
                crashed
                    .stat(crashed.resolve(ROOT, "config").unwrap())
                    .unwrap()
                    .links,
                1
            );
        }
    }

    #[test]
    fn paths_names_and_errors_are_posix_s() {
        let mut fs = Fs::default();
        let a = fs.create(ROOT, "a", true, 0o755, 0).unwrap();
        let b = fs.create(a, "b", true, 0o755, 0).unwrap();
        let f = fs.create(b, "f", false, 0o644, 0).unwrap();
        assert_eq!(fs.resolve(ROOT, "/a/b/../b/./f"), Ok(f));
        assert_eq!(fs.resolve(b, "f"), Ok(f));
        assert_eq!(fs.resolve(b, "f/x"), Err(Error::NotDir));
        assert_eq!(fs.parent_of(ROOT, "/a/b/f"), Ok((b, "f".to_string())));
        assert_eq!(fs.parent_of(b, "f"), Ok((b, "f".to_string())));
        assert_eq!(fs.parent_of(ROOT, "/top"), Ok((ROOT, "top".to_string())));
        assert_eq!(fs.create(b, "f", false, 0o644, 0), Err(Error::Exists));
        assert_eq!(fs.unlink(ROOT, "a", true, 0), Err(Error::NotEmpty));
        assert_eq!(fs.unlink(a, "b", false, 0), Err(Error::IsDir));
        assert_eq!(fs.rename(ROOT, "a", b, "inside", 0), Err(Error::Invalid));
        fs.rename(b, "f", ROOT, "g", 0).unwrap();
        assert_eq!(fs.resolve(ROOT, "g"), Ok(f));
        assert_eq!(fs.stat(f).unwrap().links, 1);
        fs.unlink(ROOT, "g", false, 0).unwrap();
        assert_eq!(fs.entries(b).unwrap(), vec![]);
        fs.truncate(f, 3, 0).unwrap();
        assert_eq!(
            fs.read(f, 0, 10).unwrap(),
            &[0, 0, 0],
            "an open file lives on"
        );
    }
}
