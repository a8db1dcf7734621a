//! Files: the node's file system (`dst::world::fs`, data and names volatile
//! until synced), `/dev/null` and `/dev/urandom`, and the calls over them
//! (`openat`, `read`/`write` at an offset, `lseek`, `stat`, `getdents64`,
//! `mkdirat`, `unlinkat`, `renameat2`, `fsync`, `ftruncate`, `chdir`, ...).
//!
//! The file system starts as a copy of a host folder ([`Kernel::seed`],
//! durable, in name order so every run sees the same inodes), which is
//! never written. Paths are the program's own: `/` is the folder's root and
//! the working directory starts there.

use std::path::Path;

use dst::world::fs::{Error, Fs, Ino, ROOT};

use super::{Context, EBADF, EFAULT, EINVAL, File, Guest, Kernel, Open, Outcome};

const AT_FDCWD: i32 = -100;
const AT_EMPTY_PATH: u64 = 0x1000;
const AT_REMOVEDIR: u64 = 0x200;
const O_ACCMODE: u64 = 3;
const O_CREAT: u64 = 0o100;
const O_EXCL: u64 = 0o200;
const O_TRUNC: u64 = 0o1000;
const O_APPEND: u64 = 0o2000;
const O_NONBLOCK: u64 = 0o4000;
const O_DIRECTORY: u64 = 0o200000;
const O_TMPFILE: u64 = 0o20000000;
/// Longest path taken.
const PATH_MAX: usize = 4096;

/// A file system error as the call returns it.
pub fn errno(e: Error) -> i64 {
    match e {
        Error::NotFound => -2,
        Error::Exists => -17,
        Error::NotDir => -20,
        Error::IsDir => -21,
        Error::Invalid => EINVAL,
        Error::NotEmpty => -39,
    }
}

/// An open file of the file system: its inode, offset and access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disk {
    pub ino: Ino,
    pub offset: u64,
    pub read: bool,
    pub write: bool,
    pub append: bool,
}

/// A `struct stat` of riscv64 Linux (asm-generic, 128 bytes).
fn stat_bytes(ino: u64, mode: u32, links: u32, size: u64, mtime: u64) -> [u8; 128] {
    let mut out = [0u8; 128];
    out[..8].copy_from_slice(&1u64.to_le_bytes()); // st_dev
    out[8..16].copy_from_slice(&ino.to_le_bytes());
    out[16..20].copy_from_slice(&mode.to_le_bytes());
    out[20..24].copy_from_slice(&links.to_le_bytes());
    out[48..56].copy_from_slice(&size.to_le_bytes());
    out[56..60].copy_from_slice(&4096u32.to_le_bytes()); // st_blksize
    out[64..72].copy_from_slice(&size.div_ceil(512).to_le_bytes()); // st_blocks
    let (s, ns) = (
        (mtime + super::EPOCH_NS) / 1_000_000_000,
        (mtime + super::EPOCH_NS) % 1_000_000_000,
    );
    for at in [72, 88, 104] {
        out[at..at + 8].copy_from_slice(&s.to_le_bytes());
        out[at + 8..at + 16].copy_from_slice(&ns.to_le_bytes());
    }
    out
}

impl Kernel {
    /// Copies the host folder `dir` into the file system, durable (files
    /// and folders in name order; links followed). The folder is only
    /// read.
    pub fn seed(&mut self, dir: &Path) -> Result<(), String> {
        fn copy(fs: &mut Fs, host: &Path, at: Ino) -> Result<(), String> {
            let mut names: Vec<_> = std::fs::read_dir(host)
                .map_err(|e| format!("{}: {e}", host.display()))?
                .map(|entry| entry.map(|e| e.path()))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{}: {e}", host.display()))?;
            names.sort();
            for path in names {
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .ok_or_else(|| format!("{}: not a UTF-8 name", path.display()))?
                    .to_string();
                let meta =
                    std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                use std::os::unix::fs::PermissionsExt;
                let mode = meta.permissions().mode();
                if meta.is_dir() {
                    let ino = fs
                        .create(at, &name, true, mode, 0)
                        .map_err(|e| format!("{name}: {e:?}"))?;
                    copy(fs, &path, ino)?;
                } else if meta.is_file() {
                    let bytes =
                        std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                    let ino = fs
                        .create(at, &name, false, mode, 0)
                        .map_err(|e| format!("{name}: {e:?}"))?;
                    fs.write(ino, 0, &bytes, 0)
                        .map_err(|e| format!("{name}: {e:?}"))?;
                }
            }
            Ok(())
        }
        if !dir.is_dir() {
            return Err(format!("{}: not a folder", dir.display()));
        }
        copy(&mut self.fs, dir, ROOT)?;
        self.fs.sync_all();
        self.crashable = true;
        Ok(())
    }

    /// Writes `bytes` to the file at absolute `path` (its folders made as
    /// needed), durable, unless a file is there already (the node's own
    /// folder has one of its own): how a cluster gives every node its
    /// `/etc/hosts`.
    pub fn put_file(&mut self, path: &str, bytes: &[u8]) -> Result<(), String> {
        if self.fs.resolve(ROOT, path).is_ok() {
            return Ok(());
        }
        let mut at = ROOT;
        let mut parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let name = parts.pop().ok_or_else(|| format!("{path}: no file name"))?;
        for part in parts {
            at = match self.fs.resolve(at, part) {
                Ok(ino) => ino,
                Err(_) => self
                    .fs
                    .create(at, part, true, 0o755, 0)
                    .map_err(|e| format!("{path}: {e:?}"))?,
            };
        }
        let ino = self
            .fs
            .create(at, name, false, 0o644, 0)
            .map_err(|e| format!("{path}: {e:?}"))?;
        self.fs
            .write(ino, 0, bytes, 0)
            .map_err(|e| format!("{path}: {e:?}"))?;
        self.fs.sync_all();
        Ok(())
    }

    /// Whether call `number` with arguments `a` is where the node may
    /// crash: before a call that changes or syncs its files takes effect,
    /// and before the program exits (so a crash can follow its last
    /// write).
    pub fn crash_point(&self, number: u64, a: &[u64; 6]) -> bool {
        match number {
            34 | 35 | 38 | 45 | 46 | 81 | 82 | 83 | 267 | 276 | 93 | 94 => true,
            56 => a[2] & (O_CREAT | O_TRUNC) != 0,
            64 | 66 | 68 => matches!(self.file(a[0]), Some(File::Disk(_))),
            _ => false,
        }
    }

    /// The path at `at` in the program's memory.
    fn path(guest: &impl Guest, at: u64) -> Result<String, i64> {
        let bytes = guest.c_string(at, PATH_MAX).map_err(|_| EFAULT)?;
        String::from_utf8(bytes).map_err(|_| -2)
    }

    /// The directory a `*at` call's `dirfd` names.
    fn dir_fd(&self, dirfd: u64) -> Result<Ino, i64> {
        if dirfd as i32 == AT_FDCWD {
            return Ok(self.cwd);
        }
        match self.file(dirfd) {
            Some(File::Disk(d)) if self.fs.stat(d.ino).is_ok_and(|s| s.dir) => Ok(d.ino),
            Some(_) => Err(-20), // ENOTDIR
            None => Err(EBADF),
        }
    }

    /// The file-system calls; `None` for any other.
    pub(super) fn file_call(
        &mut self,
        guest: &mut impl Guest,
        ctx: &Context,
        number: u64,
        a: [u64; 6],
    ) -> Option<Outcome> {
        let r = match number {
            17 => self.getcwd(guest, a[0], a[1]),
            34 => self.at_path(
                guest,
                a[0],
                a[1],
                |k, dir, name, now| {
                    // mkdirat(dirfd, path, mode)
                    k.fs.create(dir, &name, true, a[2] as u32, now).map(|_| 0)
                },
                ctx.now,
            ),
            35 => self.at_path(
                guest,
                a[0],
                a[1],
                |k, dir, name, now| {
                    // unlinkat(dirfd, path, flags)
                    k.fs.unlink(dir, &name, a[2] & AT_REMOVEDIR != 0, now)
                        .map(|_| 0)
                },
                ctx.now,
            ),
            38 | 276 => self.rename(guest, a, number == 276, ctx.now),
            45 | 46 => {
                // truncate(path, len), ftruncate(fd, len)
                let ino = if number == 46 {
                    match self.file(a[0]) {
                        Some(File::Disk(d)) if d.write => Ok(d.ino),
                        Some(_) => Err(EINVAL),
                        None => Err(EBADF),
                    }
                } else {
                    Self::path(guest, a[0])
                        .and_then(|p| self.fs.resolve(self.cwd, &p).map_err(errno))
                };
                match ino {
                    Ok(_) if (a[1] as i64) < 0 => EINVAL,
                    Ok(ino) => self
                        .fs
                        .truncate(ino, a[1], ctx.now)
                        .map_or_else(errno, |()| 0),
                    Err(e) => e,
                }
            }
            48 | 439 => {
                // faccessat(dirfd, path, mode[, flags]): existence is access
                match self.lookup(guest, a[0], a[1], 0) {
                    Ok(_) => 0,
                    Err(e) => e,
                }
            }
            49 | 50 => {
                // chdir(path), fchdir(fd)
                let ino = if number == 49 {
                    Self::path(guest, a[0])
                        .and_then(|p| self.fs.resolve(self.cwd, &p).map_err(errno))
                } else {
                    match self.file(a[0]) {
                        Some(File::Disk(d)) => Ok(d.ino),
                        Some(_) => Err(-20),
                        None => Err(EBADF),
                    }
                };
                match ino.map(|ino| (ino, self.fs.stat(ino))) {
                    Ok((ino, Ok(s))) if s.dir => {
                        self.cwd = ino;
                        0
                    }
                    Ok(_) => -20, // ENOTDIR
                    Err(e) => e,
                }
            }
            56 => self.openat(guest, a, ctx.now),
            61 => self.getdents(guest, a[0], a[1], a[2]),
            62 => self.lseek(a[0], a[1] as i64, a[2]),
            67 | 68 => {
                // pread64(fd, buf, len, offset), pwrite64
                let Some(File::Disk(d)) = self.file(a[0]).cloned() else {
                    return Some(Outcome::Return(if self.file(a[0]).is_some() {
                        -29
                    } else {
                        EBADF
                    }));
                };
                if number == 67 {
                    self.disk_read(guest, d, a[1], a[2], a[3]).0
                } else {
                    self.disk_write(guest, d, a[1], a[2], a[3], ctx.now).0
                }
            }
            78 => {
                // readlinkat: there are no symbolic links
                match self.lookup(guest, a[0], a[1], 0) {
                    Ok(_) => EINVAL,
                    Err(e) => e,
                }
            }
            79 => {
                // newfstatat(dirfd, path, buf, flags)
                match self.lookup(guest, a[0], a[1], a[3]) {
                    Ok(Found::Inode(ino)) => self.write_stat(guest, ino, a[2]),
                    Ok(Found::Descriptor) => self.fd_stat(guest, a[0], a[2]),
                    Ok(Found::Device) => {
                        super::written(guest.write(a[2], &stat_bytes(1, 0o020666, 1, 0, 0)))
                    }
                    Err(e) => e,
                }
            }
            80 => self.fd_stat(guest, a[0], a[1]),
            81 => {
                // sync
                self.fs.sync_all();
                0
            }
            82 | 83 => match self.file(a[0]) {
                // fsync, fdatasync
                Some(File::Disk(d)) => self.fs.sync(d.ino).map_or_else(errno, |()| 0),
                Some(_) => EINVAL,
                None => EBADF,
            },
            267 => match self.file(a[0]) {
                // syncfs
                Some(_) => {
                    self.fs.sync_all();
                    0
                }
                None => EBADF,
            },
            291 => super::ENOSYS, // statx: callers fall back to newfstatat
            _ => return None,
        };
        Some(Outcome::Return(r))
    }

    /// Runs `f` on the (directory, name) of a `*at` call's path.
    fn at_path(
        &mut self,
        guest: &impl Guest,
        dirfd: u64,
        path: u64,
        f: impl FnOnce(&mut Kernel, Ino, String, u64) -> Result<i64, Error>,
        now: u64,
    ) -> i64 {
        let (dir, name) = match self
            .dir_fd(dirfd)
            .and_then(|at| Self::path(guest, path).map(|p| (at, p)))
            .and_then(|(at, p)| self.fs.parent_of(at, &p).map_err(errno))
        {
            Ok(found) => found,
            Err(e) => return e,
        };
        f(self, dir, name, now).unwrap_or_else(errno)
    }

    /// What a `*at` call's path names: an inode, the descriptor itself (an
    /// empty path with AT_EMPTY_PATH), or a device.
    fn lookup(&self, guest: &impl Guest, dirfd: u64, path: u64, flags: u64) -> Result<Found, i64> {
        let p = Self::path(guest, path)?;
        if p.is_empty() {
            return if flags & AT_EMPTY_PATH != 0 {
                Ok(Found::Descriptor)
            } else {
                Err(-2)
            };
        }
        if device(&p).is_some() {
            return Ok(Found::Device);
        }
        let at = self.dir_fd(dirfd)?;
        self.fs.resolve(at, &p).map(Found::Inode).map_err(errno)
    }

    fn write_stat(&self, guest: &mut impl Guest, ino: Ino, buf: u64) -> i64 {
        match self.fs.stat(ino) {
            Ok(s) => {
                let kind = if s.dir { 0o040000 } else { 0o100000 };
                super::written(guest.write(
                    buf,
                    &stat_bytes(s.ino, kind | s.mode, s.links, s.size, s.mtime),
                ))
            }
            Err(e) => errno(e),
        }
    }

    /// `fstat` of a descriptor: a disk file's inode, else a character
    /// device (the standard streams, `/dev/null`), or a FIFO (a pipe).
    fn fd_stat(&self, guest: &mut impl Guest, fd: u64, buf: u64) -> i64 {
        let mode = match self.file(fd) {
            None => return EBADF,
            Some(File::Disk(d)) => return self.write_stat(guest, d.ino, buf),
            Some(File::PipeRead(_) | File::PipeWrite(_)) => 0o010600,
            Some(_) => 0o020620,
        };
        super::written(guest.write(buf, &stat_bytes(1000 + fd, mode, 1, 0, 0)))
    }

    fn getcwd(&self, guest: &mut impl Guest, buf: u64, size: u64) -> i64 {
        let mut parts = Vec::new();
        let mut at = self.cwd;
        while at != ROOT {
            let Ok(parent) = self.fs.parent(at) else {
                return -2; // the working directory was removed
            };
            let Some(name) = self
                .fs
                .entries(parent)
                .ok()
                .and_then(|e| e.into_iter().find(|(_, i, _)| *i == at).map(|(n, _, _)| n))
            else {
                return -2;
            };
            parts.push(name);
            at = parent;
        }
        parts.reverse();
        let path = format!("/{}\0", parts.join("/"));
        if (size as usize) < path.len() {
            return -34; // ERANGE
        }
        match guest.write(buf, path.as_bytes()) {
            Ok(()) => path.len() as i64,
            Err(_) => EFAULT,
        }
    }

    fn openat(&mut self, guest: &impl Guest, a: [u64; 6], now: u64) -> i64 {
        let flags = a[2];
        let p = match Self::path(guest, a[1]) {
            Ok(p) => p,
            Err(e) => return e,
        };
        if p.is_empty() {
            return -2;
        }
        if flags & O_TMPFILE == O_TMPFILE {
            return -95; // EOPNOTSUPP
        }
        let nonblock = flags & O_NONBLOCK != 0;
        if let Some(dev) = device(&p) {
            return self.install(dev, nonblock);
        }
        let at = match self.dir_fd(a[0]) {
            Ok(at) => at,
            Err(e) => return e,
        };
        let access = flags & O_ACCMODE;
        let (read, write) = (access != 1, access != 0);
        let ino = match self.fs.resolve(at, &p) {
            Ok(_) if flags & O_CREAT != 0 && flags & O_EXCL != 0 => return -17,
            Ok(ino) => ino,
            Err(Error::NotFound) if flags & O_CREAT != 0 => {
                match self.fs.parent_of(at, &p).and_then(|(dir, name)| {
                    self.fs.create(dir, &name, false, a[3] as u32 & !0o022, now)
                }) {
                    Ok(ino) => ino,
                    Err(e) => return errno(e),
                }
            }
            Err(e) => return errno(e),
        };
        let Ok(stat) = self.fs.stat(ino) else {
            return -2;
        };
        if stat.dir && write {
            return -21; // EISDIR
        }
        if !stat.dir && flags & O_DIRECTORY != 0 {
            return -20; // ENOTDIR
        }
        if flags & O_TRUNC != 0 && write && !stat.dir && stat.size > 0 {
            let _ = self.fs.truncate(ino, 0, now);
        }
        let disk = Disk {
            ino,
            offset: 0,
            read,
            write,
            append: flags & O_APPEND != 0,
        };
        let world = self
            .world_files
            .iter()
            .any(|path| self.fs.resolve(ROOT, path) == Ok(ino));
        if world && !self.world_inos.contains(&ino) {
            self.world_inos.push(ino);
            self.keep_durable(ino);
        }
        if world {
            // Its name too (with its folder's other names: the world's
            // files are best kept in a folder of their own).
            if let Ok((dir, _)) = self.fs.parent_of(at, &p) {
                let _ = self.fs.sync(dir);
            }
        }
        self.install(File::Disk(disk), nonblock)
    }

    fn lseek(&mut self, fd: u64, offset: i64, whence: u64) -> i64 {
        let Some(Some(Open {
            file: File::Disk(d),
            ..
        })) = self.files.get_mut(fd as usize)
        else {
            return if self.file(fd).is_some() { -29 } else { EBADF }; // ESPIPE
        };
        let size = self.fs.stat(d.ino).map_or(0, |s| s.size) as i64;
        let base = match whence {
            0 => 0,
            1 => d.offset as i64,
            2 => size,
            _ => return EINVAL,
        };
        match base.checked_add(offset) {
            Some(to) if to >= 0 => {
                d.offset = to as u64;
                to
            }
            _ => EINVAL,
        }
    }

    /// Reads a disk file into `buf` at `offset`: the result, and the
    /// bytes read.
    pub(super) fn disk_read(
        &self,
        guest: &mut impl Guest,
        d: Disk,
        buf: u64,
        len: u64,
        offset: u64,
    ) -> (i64, u64) {
        if !d.read {
            return (EBADF, 0);
        }
        match self.fs.read(d.ino, offset, len.min(1 << 20) as usize) {
            Ok(bytes) => match guest.write(buf, bytes) {
                Ok(()) => (bytes.len() as i64, bytes.len() as u64),
                Err(_) => (EFAULT, 0),
            },
            Err(e) => (errno(e), 0),
        }
    }

    /// Writes `buf` to a disk file at `offset` (its end when appending):
    /// the result, and where the write ended.
    pub(super) fn disk_write(
        &mut self,
        guest: &impl Guest,
        d: Disk,
        buf: u64,
        len: u64,
        offset: u64,
        now: u64,
    ) -> (i64, u64) {
        if !d.write {
            return (EBADF, offset);
        }
        let mut bytes = vec![0u8; len.min(1 << 20) as usize];
        if guest.read(buf, &mut bytes).is_err() {
            return (EFAULT, offset);
        }
        let at = if d.append {
            self.fs.stat(d.ino).map_or(offset, |s| s.size)
        } else {
            offset
        };
        match self.fs.write(d.ino, at, &bytes, now) {
            Ok(()) => {
                if self.world_inos.contains(&d.ino) {
                    self.keep_durable(d.ino);
                }
                (bytes.len() as i64, at + bytes.len() as u64)
            }
            Err(e) => (errno(e), offset),
        }
    }

    /// A file of the world's: its data durable now.
    fn keep_durable(&mut self, ino: Ino) {
        let _ = self.fs.sync(ino);
    }

    /// Appends `bytes` to the file at absolute `path` (if there is one),
    /// durable.
    pub fn append_file(&mut self, path: &str, bytes: &[u8]) {
        let Ok(ino) = self.fs.resolve(ROOT, path) else {
            return;
        };
        let size = self.fs.stat(ino).map_or(0, |s| s.size);
        if self.fs.write(ino, size, bytes, 0).is_ok() {
            self.keep_durable(ino);
        }
    }

    /// The contents of the file at absolute `path`, if there is one.
    pub fn file_contents(&self, path: &str) -> Option<Vec<u8>> {
        let ino = self.fs.resolve(ROOT, path).ok()?;
        let size = self.fs.stat(ino).ok()?.size;
        self.fs.read(ino, 0, size as usize).ok().map(<[u8]>::to_vec)
    }

    fn getdents(&mut self, guest: &mut impl Guest, fd: u64, buf: u64, len: u64) -> i64 {
        let Some(File::Disk(d)) = self.file(fd).cloned() else {
            return if self.file(fd).is_some() { -20 } else { EBADF };
        };
        let Ok(entries) = self.fs.entries(d.ino) else {
            return -20;
        };
        let parent = self.fs.parent(d.ino).unwrap_or(d.ino);
        let mut all = vec![
            (".".to_string(), d.ino, true),
            ("..".to_string(), parent, true),
        ];
        all.extend(entries);
        let mut out = Vec::new();
        let mut next = d.offset as usize;
        for (name, ino, dir) in all.iter().skip(next) {
            // struct linux_dirent64: ino, off, reclen, type, name, NUL, padding
            let reclen = (19 + name.len() + 1).next_multiple_of(8);
            if out.len() + reclen > len as usize {
                break;
            }
            let start = out.len();
            out.resize(start + reclen, 0);
            out[start..start + 8].copy_from_slice(&ino.to_le_bytes());
            out[start + 8..start + 16].copy_from_slice(&(next as u64 + 1).to_le_bytes());
            out[start + 16..start + 18].copy_from_slice(&(reclen as u16).to_le_bytes());
            out[start + 18] = if *dir { 4 } else { 8 }; // DT_DIR, DT_REG
            out[start + 19..start + 19 + name.len()].copy_from_slice(name.as_bytes());
            next += 1;
        }
        if out.is_empty() && next < all.len() {
            return EINVAL; // the buffer holds not one entry
        }
        if guest.write(buf, &out).is_err() {
            return EFAULT;
        }
        if let Some(Some(Open {
            file: File::Disk(d),
            ..
        })) = self.files.get_mut(fd as usize)
        {
            d.offset = next as u64;
        }
        out.len() as i64
    }

    fn rename(&mut self, guest: &impl Guest, a: [u64; 6], flags_given: bool, now: u64) -> i64 {
        let flags = if flags_given { a[4] } else { 0 };
        const RENAME_NOREPLACE: u64 = 1;
        if flags & !RENAME_NOREPLACE != 0 {
            return EINVAL; // RENAME_EXCHANGE, RENAME_WHITEOUT
        }
        let from = self.dir_fd(a[0]).and_then(|at| {
            Self::path(guest, a[1]).and_then(|p| self.fs.parent_of(at, &p).map_err(errno))
        });
        let to = self.dir_fd(a[2]).and_then(|at| {
            Self::path(guest, a[3]).and_then(|p| self.fs.parent_of(at, &p).map_err(errno))
        });
        let ((from_dir, from), (to_dir, to)) = match (from, to) {
            (Ok(f), Ok(t)) => (f, t),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        if flags & RENAME_NOREPLACE != 0 && self.fs.resolve(to_dir, &to).is_ok() {
            return -17;
        }
        self.fs
            .rename(from_dir, &from, to_dir, &to, now)
            .map_or_else(errno, |()| 0)
    }
}

/// What a path names.
enum Found {
    Inode(Ino),
    Descriptor,
    Device,
}

/// The devices a path may name.
fn device(path: &str) -> Option<File> {
    match path {
        "/dev/null" => Some(File::Null),
        "/dev/urandom" | "/dev/random" => Some(File::Random),
        _ => None,
    }
}
