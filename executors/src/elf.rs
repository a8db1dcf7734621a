//! The catalog of a C or C++ binary, read from its file: the records of its
//! `dst_catalog` section (format: `dst::catalog::c`), without running it.

use std::path::Path;

use dst::catalog::{SiteInfo, c};
use object::{Object, ObjectSection};

/// Every assertion site in the `dst_catalog` section of the ELF file at
/// `path` (an executable, shared object or object file).
pub fn catalog(path: &Path) -> Result<Vec<SiteInfo>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let file = object::File::parse(&*bytes)
        .map_err(|e| format!("{} is not an object file: {e}", path.display()))?;
    let Some(section) = file.section_by_name("dst_catalog") else {
        return Ok(Vec::new());
    };
    let data = section.data().map_err(|e| {
        format!(
            "cannot read the dst_catalog section of {}: {e}",
            path.display()
        )
    })?;
    Ok(c::parse(data)
        .iter()
        .enumerate()
        .map(|(i, record)| record.info(i as u32))
        .collect())
}
