//! Reading the input files a config names (CDFs, traces): only regular files,
//! only up to a size, so a device (`/dev/zero`), a FIFO or a runaway file is
//! a clear error instead of a hang or an exhausted memory.

use std::io::Read;
use std::path::Path;

/// The largest CDF file photonet reads (the standard ones are < 16 KB).
pub const MAX_CDF_BYTES: u64 = 16 << 20;
/// The largest trace file photonet reads (tens of millions of flows).
pub const MAX_TRACE_BYTES: u64 = 4 << 30;

/// The text of `path`, a `what` (e.g. "CDF file"): an error naming the file
/// and why if it is not a regular file, is larger than `max_bytes`, cannot
/// be read or is not UTF-8.
pub fn read_text(path: &Path, what: &str, max_bytes: u64) -> Result<String, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {what} {shown}: {e}"))?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a folder"
        } else {
            "not a regular file (a device, FIFO or socket)"
        };
        return Err(format!(
            "{what} {shown} is {kind}; photonet reads {what}s from regular files"
        ));
    }
    if meta.len() > max_bytes {
        return Err(format!(
            "{what} {shown} is {} bytes, over the limit of {max_bytes} bytes for a {what}",
            meta.len()
        ));
    }
    let mut raw = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(path)
        .and_then(|f| f.take(max_bytes + 1).read_to_end(&mut raw))
        .map_err(|e| format!("cannot read {what} {shown}: {e}"))?;
    if raw.len() as u64 > max_bytes {
        return Err(format!(
            "{what} {shown} grew past the limit of {max_bytes} bytes while being read"
        ));
    }
    String::from_utf8(raw).map_err(|e| {
        format!(
            "{what} {shown} is not UTF-8 text (byte {} is not valid); save it as UTF-8",
            e.utf8_error().valid_up_to()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_folders_and_oversized_files_are_refused_by_name() {
        let e = read_text(Path::new("/dev/zero"), "CDF file", 100).unwrap_err();
        assert!(
            e.contains("/dev/zero") && e.contains("not a regular file"),
            "{e}"
        );
        let dir = std::env::temp_dir();
        let e = read_text(&dir, "trace", 100).unwrap_err();
        assert!(e.contains("is a folder"), "{e}");
        let f = dir.join(format!("pn-files-{}.txt", std::process::id()));
        std::fs::write(&f, "0123456789").unwrap();
        assert_eq!(read_text(&f, "trace", 10).unwrap(), "0123456789");
        let e = read_text(&f, "trace", 9).unwrap_err();
        assert!(e.contains("10 bytes, over the limit of 9 bytes"), "{e}");
        std::fs::write(&f, [b'a', 0xff, b'b']).unwrap();
        let e = read_text(&f, "trace", 10).unwrap_err();
        assert!(e.contains("not UTF-8") && e.contains("byte 1"), "{e}");
        let e = read_text(&dir.join("pn-no-such-file"), "trace", 10).unwrap_err();
        assert!(e.starts_with("cannot read trace"), "{e}");
        std::fs::remove_file(&f).ok();
    }
}
