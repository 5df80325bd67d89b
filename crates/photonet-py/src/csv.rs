//! Numeric columns written as CSV text exactly as pandas'
//! `DataFrame.to_csv(index=False)` writes them: integers in decimal, float64
//! as Python's `repr` (shortest round-trip digits; scientific notation below
//! 1e-4 and from 1e16 on, with a two-digit exponent at least), NaN as an empty
//! field. A paper-scale flow table (10 M rows) takes pandas ~45 s of CPU and
//! the whole text in memory; this streams it in a few seconds.

use numpy::PyReadonlyArray1;
use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::fmt::Write as _;
use std::io::Write as _;

/// One column, borrowed from a numpy array.
enum Col<'a> {
    I64(&'a [i64]),
    U64(&'a [u64]),
    U32(&'a [u32]),
    F64(&'a [f64]),
}

impl Col<'_> {
    fn len(&self) -> usize {
        match self {
            Col::I64(v) => v.len(),
            Col::U64(v) => v.len(),
            Col::U32(v) => v.len(),
            Col::F64(v) => v.len(),
        }
    }

    fn push(&self, i: usize, out: &mut String) {
        match self {
            Col::I64(v) => push_i64(out, v[i]),
            Col::U64(v) => push_u64(out, v[i]),
            Col::U32(v) => push_u64(out, u64::from(v[i])),
            Col::F64(v) => push_py_float(out, v[i]),
        }
    }
}

/// Whether `x` (of decimal exponent `exp10`) can lie exactly halfway
/// between two decimals of 15 to 17 significant digits: only if its exact
/// decimal expansion has at most 18 significant digits. x = m·2^e with m odd
/// and e < 0 has exactly -e digits after the point, the last nonzero, so
/// -e + exp10 + 1 significant digits (most times in µs have ~50).
fn may_tie(x: f64, exp10: i32) -> bool {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), biased - 1075)
    };
    if m == 0 {
        return false;
    }
    let e = e + m.trailing_zeros() as i32;
    let significant = -e + exp10 + 1;
    e >= 0 || significant <= 18
}

/// Appends the decimal digits of `v` (what `{}` writes, without the
/// formatting machinery).
fn push_u64(out: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&buf[i..]).expect("ASCII digits"));
}

fn push_i64(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    push_u64(out, v.unsigned_abs());
}

/// Appends `x` as Python's `repr(float)` writes it; NaN (pandas' empty
/// `na_rep`) appends nothing.
pub fn push_py_float(out: &mut String, x: f64) {
    if x.is_nan() {
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "inf" } else { "-inf" });
        return;
    }
    // Rust's `{:e}` gives the shortest digits that round-trip, as Python's
    // repr does: "8.01e2", "-1.5e-7", "0e0". Where two strings of that length
    // round-trip equally close to `x` (an exact tie, e.g. ...593.25 between
    // ...593.2 and ...593.3), Python takes the correctly rounded one (ties to
    // even): so the correctly rounded string of the same length is used
    // whenever it round-trips. Two strings of n digits both round-trip only
    // if 10^-n < 2^-52 (adjacent n-digit decimals are more than x·10^-n
    // apart; the round-trip interval is at most an ulp, 2^-52·x, wide), i.e.
    // n >= 16: shorter ones need no check (checked from 15 on, a margin).
    let mut sci = String::with_capacity(32);
    write!(sci, "{x:e}").expect("write to String");
    let (mant, exp10) = sci.split_once('e').expect("{:e} has an exponent");
    let len = mant.bytes().filter(u8::is_ascii_digit).count();
    let exp10: i32 = exp10.parse().expect("{:e} exponent is an integer");
    if len >= 15 && may_tie(x, exp10) {
        let mut rounded = String::with_capacity(32);
        write!(rounded, "{x:.*e}", len - 1).expect("write to String");
        if rounded != sci && rounded.parse::<f64>() == Ok(x) {
            sci = rounded;
        }
    }
    let (mant, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let mant = match mant.strip_prefix('-') {
        Some(m) => {
            out.push('-');
            m
        }
        None => mant,
    };
    // The significant digits, without the point (at most 17).
    let mut buf = [0u8; 24];
    let mut n = 0;
    for b in mant.bytes().filter(u8::is_ascii_digit) {
        buf[n] = b;
        n += 1;
    }
    let digits = std::str::from_utf8(&buf[..n]).expect("ASCII digits");
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let point = exp as usize + 1; // digits before the decimal point
            if n <= point {
                out.push_str(digits);
                out.extend(std::iter::repeat_n('0', point - n));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        write!(
            out,
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        )
        .expect("write to String");
    }
}

/// Writes `columns` (1-D contiguous numpy arrays of int64, uint64, uint32 or
/// float64, all of one length) under `header` to the file `path` (created or
/// truncated), lines ended by `lineterminator`, and syncs it to disk.
#[pyfunction]
pub fn write_csv(
    path: std::path::PathBuf,
    header: Vec<String>,
    columns: Vec<Bound<'_, PyAny>>,
    lineterminator: &str,
) -> PyResult<()> {
    if header.len() != columns.len() {
        return Err(PyValueError::new_err(format!(
            "write_csv: {} names for {} columns",
            header.len(),
            columns.len()
        )));
    }
    // Hold the read borrows for the whole write.
    let mut i64s = Vec::new();
    let mut u64s = Vec::new();
    let mut u32s = Vec::new();
    let mut f64s = Vec::new();
    let mut kinds = Vec::new();
    for (a, name) in columns.iter().zip(&header) {
        if let Ok(x) = a.extract::<PyReadonlyArray1<'_, i64>>() {
            kinds.push((0, i64s.len()));
            i64s.push(x);
        } else if let Ok(x) = a.extract::<PyReadonlyArray1<'_, u64>>() {
            kinds.push((1, u64s.len()));
            u64s.push(x);
        } else if let Ok(x) = a.extract::<PyReadonlyArray1<'_, u32>>() {
            kinds.push((2, u32s.len()));
            u32s.push(x);
        } else if let Ok(x) = a.extract::<PyReadonlyArray1<'_, f64>>() {
            kinds.push((3, f64s.len()));
            f64s.push(x);
        } else {
            return Err(PyTypeError::new_err(format!(
                "write_csv: column {name:?} is not a 1-D int64, uint64, uint32 or float64 numpy array"
            )));
        }
    }
    let not_contiguous =
        |name: &str| PyValueError::new_err(format!("write_csv: column {name:?} is not contiguous"));
    let mut cols = Vec::with_capacity(kinds.len());
    for ((kind, j), name) in kinds.iter().zip(&header) {
        let c = match kind {
            0 => Col::I64(i64s[*j].as_slice().map_err(|_| not_contiguous(name))?),
            1 => Col::U64(u64s[*j].as_slice().map_err(|_| not_contiguous(name))?),
            2 => Col::U32(u32s[*j].as_slice().map_err(|_| not_contiguous(name))?),
            _ => Col::F64(f64s[*j].as_slice().map_err(|_| not_contiguous(name))?),
        };
        cols.push(c);
    }
    let rows = cols.first().map_or(0, Col::len);
    if let Some((c, name)) = cols.iter().zip(&header).find(|(c, _)| c.len() != rows) {
        return Err(PyValueError::new_err(format!(
            "write_csv: column {name:?} has {} rows, the first {rows}",
            c.len()
        )));
    }
    let io = |e: std::io::Error| PyOSError::new_err(format!("{}: {e}", path.display()));
    let file = std::fs::File::create(&path).map_err(io)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut line = String::with_capacity(256);
    line.push_str(&header.join(","));
    line.push_str(lineterminator);
    w.write_all(line.as_bytes()).map_err(io)?;
    for i in 0..rows {
        line.clear();
        for (k, c) in cols.iter().enumerate() {
            if k > 0 {
                line.push(',');
            }
            c.push(i, &mut line);
        }
        line.push_str(lineterminator);
        w.write_all(line.as_bytes()).map_err(io)?;
    }
    let file = w.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    Ok(())
}
