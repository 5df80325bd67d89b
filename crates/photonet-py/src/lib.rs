//! Python bindings: `photonet._core`. The simulation runs with the GIL released;
//! progress is reported to an optional Python callback, which can also cancel.

use numpy::IntoPyArray;
use photonet::config::Config;
use photonet::fabric::registry;
use photonet::run::{
    input_files as config_input_files, prepare as prepare_run, simulate, Paths, Prepared, RunResult,
};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::Mutex;

mod csv;

create_exception!(
    _core,
    ConfigError,
    PyValueError,
    "A configuration value that cannot be simulated."
);

create_exception!(
    _core,
    SimulationError,
    pyo3::exceptions::PyRuntimeError,
    "A run that stalled or whose output is physically impossible (the message names the violation)."
);

fn paths(base_dir: Option<String>, search: Vec<String>) -> Paths {
    Paths {
        base_dir: base_dir.map(PathBuf::from),
        search: search.into_iter().map(PathBuf::from).collect(),
    }
}

fn parse(text: &str) -> PyResult<Config> {
    Config::from_toml(text).map_err(|e| ConfigError::new_err(e.to_string()))
}

/// Parses and validates a TOML config (including referenced files); returns the
/// complete config, with every default filled in, as TOML.
#[pyfunction]
#[pyo3(signature = (config_toml, base_dir=None, search=Vec::new()))]
fn validate(config_toml: &str, base_dir: Option<String>, search: Vec<String>) -> PyResult<String> {
    Ok(prepare(config_toml, base_dir, search)?.config)
}

/// The files a config reads, as (config key, resolved path) pairs, resolved
/// as `run` resolves them.
#[pyfunction]
#[pyo3(signature = (config_toml, base_dir=None, search=Vec::new()))]
fn input_files(
    config_toml: &str,
    base_dir: Option<String>,
    search: Vec<String>,
) -> PyResult<Vec<(String, String)>> {
    let cfg = parse(config_toml)?;
    let files = config_input_files(&cfg, &paths(base_dir, search))
        .map_err(|e| ConfigError::new_err(e.to_string()))?;
    Ok(files
        .into_iter()
        .map(|(k, p)| (k.to_string(), p.display().to_string()))
        .collect())
}

/// Settings of a config that parse but cannot affect its run (e.g. the table
/// of a fabric other than the selected one), as messages.
#[pyfunction]
fn warnings(config_toml: &str) -> PyResult<Vec<String>> {
    Ok(parse(config_toml)?.warnings)
}

/// The default config as TOML, documented: the common keys and every
/// registered fabric's table, each key with its doc comment and default.
#[pyfunction]
fn default_config() -> String {
    photonet::config::documented_default_config()
}

/// Every registered fabric, in comparison order: dicts with `name` (the
/// value of `fabric = ...`), `label`, `short` (a label of at most 12
/// characters), `family` (plots facet by it), `table` (its parameter table)
/// and `description`.
#[pyfunction]
fn fabrics(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    registry::variants()
        .map(|(spec, v)| {
            let d = PyDict::new(py);
            d.set_item("name", v.name)?;
            d.set_item("label", v.label)?;
            d.set_item("table", spec.table)?;
            d.set_item("description", v.description)?;
            let (short, family) =
                registry::looks(v.name).unwrap_or((v.name, registry::Family::Ideal));
            d.set_item("short", short)?;
            d.set_item("family", family.label())?;
            Ok(d)
        })
        .collect()
}

/// Every registered fabric's declared statistics: one dict per (fabric,
/// statistic) a run of that fabric may emit, in registry order, with
/// `fabric` (the value of `fabric = ...`), `name` (a `<…>` stands for a part
/// the run names, e.g. a tier), `unit`, `doc` and `when` (`always`,
/// `checked`: with `metrics.check_invariants` only, `sometimes`: the doc
/// says when).
#[pyfunction]
fn statistics(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    use photonet::fabric::stats_decl::When;
    let mut out = Vec::new();
    for (spec, v) in registry::variants() {
        for st in spec.stats().iter().filter(|s| s.may_appear(v.name, true)) {
            let d = PyDict::new(py);
            d.set_item("fabric", v.name)?;
            d.set_item("name", st.name)?;
            d.set_item("unit", st.unit)?;
            d.set_item("doc", st.doc)?;
            let when = match st.when {
                When::Always | When::Variants(_) => "always",
                When::Checked => "checked",
                When::Sometimes => "sometimes",
            };
            d.set_item("when", when)?;
            out.push(d);
        }
    }
    Ok(out)
}

/// A config parsed, checked and built once, ready to run once: `config` (the
/// complete TOML, every default filled in), `input_files` (the files it read,
/// as (config key, resolved path) pairs) and `run(progress=None)`.
#[pyclass(module = "photonet._core", name = "Prepared")]
struct PyPrepared {
    /// Taken by `run`.
    prepared: Mutex<Option<Prepared>>,
    #[pyo3(get)]
    config: String,
    #[pyo3(get)]
    input_files: Vec<(String, String)>,
}

/// Parses and checks a TOML config (including referenced files) and builds
/// its fabric and workload, once: returns a `Prepared`. Bad input raises
/// ConfigError.
#[pyfunction]
#[pyo3(signature = (config_toml, base_dir=None, search=Vec::new()))]
fn prepare(
    config_toml: &str,
    base_dir: Option<String>,
    search: Vec<String>,
) -> PyResult<PyPrepared> {
    let to_py = |e: photonet::ConfigError| ConfigError::new_err(e.to_string());
    // Parsed only: `prepare_run` plans (checks) the fabric, once.
    let cfg = Config::parse(config_toml).map_err(to_py)?;
    let paths = paths(base_dir, search);
    let prepared = prepare_run(&cfg, &paths).map_err(to_py)?;
    let input_files = config_input_files(&cfg, &paths)
        .map_err(to_py)?
        .into_iter()
        .map(|(k, p)| (k.to_string(), p.display().to_string()))
        .collect();
    Ok(PyPrepared {
        prepared: Mutex::new(Some(prepared)),
        config: cfg.to_toml(),
        input_files,
    })
}

/// How many fabrics the core has built on the calling thread (a test counts
/// the builds of one run with it).
#[pyfunction]
fn fabric_builds() -> u64 {
    registry::builds_on_this_thread()
}

#[pymethods]
impl PyPrepared {
    /// Runs the simulation (once). `progress(now_us, arrived, completed,
    /// events)` is called now and then; returning False cancels. Returns a
    /// dict with `summary` (JSON text), `flows` (columns as numpy arrays
    /// owning the core's buffers: id, src, dst uint32; bytes, start_ps,
    /// finish_ps (u64::MAX: unfinished), delivered_bytes uint64), `series`
    /// (or None), `config` (complete TOML), `wall_s` and `cancelled`.
    #[pyo3(signature = (progress=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let taken = self.prepared.lock().expect("not poisoned").take();
        let Some(prepared) = taken else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "this Prepared has already run (prepare again to run again)",
            ));
        };
        run_prepared(py, prepared, &self.config, progress)
    }
}

/// Runs one simulation: `prepare(config_toml, base_dir, search).run(progress)`.
#[pyfunction]
#[pyo3(signature = (config_toml, base_dir=None, search=Vec::new(), progress=None))]
fn run<'py>(
    py: Python<'py>,
    config_toml: &str,
    base_dir: Option<String>,
    search: Vec<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    prepare(config_toml, base_dir, search)?.run(py, progress)
}

fn run_prepared<'py>(
    py: Python<'py>,
    prepared: Prepared,
    config: &str,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let t0 = std::time::Instant::now();
    let (result, interrupted) = py.detach(move || {
        let mut interrupted: Option<PyErr> = None;
        let mut cb = |p: photonet::engine::Progress| -> bool {
            Python::attach(|py| {
                if let Err(e) = py.check_signals() {
                    interrupted = Some(e);
                    return false;
                }
                let Some(f) = &progress else { return true };
                match f.call1(
                    py,
                    (
                        p.now.as_us_f64(),
                        p.flows_arrived,
                        p.flows_completed,
                        p.events,
                    ),
                ) {
                    Ok(v) => !v.bind(py).is(&*pyo3::types::PyBool::new(py, false)),
                    Err(e) => {
                        interrupted = Some(e);
                        false
                    }
                }
            })
        };
        let r = simulate(prepared, &mut cb);
        (r, interrupted)
    });
    let wall = t0.elapsed().as_secs_f64();
    // Ctrl-C or an exception raised by the progress callback.
    if let Some(e) = interrupted {
        return Err(e);
    }
    let result = result.map_err(|e| SimulationError::new_err(e.to_string()))?;
    // `..`: fields RunResult may gain are not needed here.
    let RunResult {
        summary,
        flows: f,
        series,
        cancelled,
        ..
    } = result;
    let out = PyDict::new(py);
    out.set_item(
        "summary",
        serde_json::to_string(&summary).expect("summary serialises"),
    )?;
    // Columns as numpy arrays that take ownership of the core's vectors: no
    // copy and no Python object per value (10 M flows would need ~2 GB as int
    // lists). Each column is handed over as soon as it is converted, so the
    // table is never held twice.
    let flows = PyDict::new(py);
    let id: Vec<u32> = (0..f.len() as u32).collect(); // a flow's id is its index
    flows.set_item("id", id.into_pyarray(py))?;
    flows.set_item("src", f.src.into_pyarray(py))?;
    flows.set_item("dst", f.dst.into_pyarray(py))?;
    flows.set_item("bytes", f.bytes.into_pyarray(py))?;
    flows.set_item("start_ps", f.start_ps.into_pyarray(py))?;
    // Unfinished flows: u64::MAX (FlowTable::UNFINISHED, no finish time can
    // be that large).
    const _: () = assert!(photonet::run::FlowTable::UNFINISHED == u64::MAX);
    flows.set_item("finish_ps", f.finish_ps.into_pyarray(py))?;
    flows.set_item("delivered_bytes", f.delivered.into_pyarray(py))?;
    out.set_item("flows", flows)?;
    match &series {
        Some(s) => {
            let d = PyDict::new(py);
            d.set_item("bin_ps", s.bin.0)?;
            d.set_item("bytes", &s.bytes)?;
            out.set_item("series", d)?;
        }
        None => out.set_item("series", py.None())?,
    }
    out.set_item("config", config)?;
    out.set_item("wall_s", wall)?;
    out.set_item("cancelled", cancelled)?;
    Ok(out)
}

/// The registered analytical models, in listing order: dicts with `name` and
/// a one-line `description`.
#[pyfunction]
fn models(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    photonet::model::MODELS
        .iter()
        .map(|m| {
            let d = PyDict::new(py);
            d.set_item("name", m.name)?;
            d.set_item("description", m.description)?;
            Ok(d)
        })
        .collect()
}

/// Evaluates the model `name`: `params_toml` holds its parameters (missing
/// keys take the defaults), `options_json` its options (JSON object; what to
/// sweep). Returns the report as JSON text; an unknown model, bad parameters
/// or options raise ConfigError naming the key, value and reason.
#[pyfunction]
#[pyo3(signature = (name, params_toml="", options_json="{}"))]
fn model_report(name: &str, params_toml: &str, options_json: &str) -> PyResult<String> {
    let to_py = |e: photonet::ConfigError| ConfigError::new_err(e.to_string());
    let options: serde_json::Value = serde_json::from_str(options_json).map_err(|e| {
        to_py(photonet::ConfigError::new(
            "options",
            options_json,
            format!("not valid JSON: {e}"),
        ))
    })?;
    let report = photonet::model::evaluate(name, params_toml, &options).map_err(to_py)?;
    Ok(serde_json::to_string(&report).expect("model report serialises"))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(prepare, m)?)?;
    m.add_function(wrap_pyfunction!(fabric_builds, m)?)?;
    m.add_class::<PyPrepared>()?;
    m.add_function(wrap_pyfunction!(input_files, m)?)?;
    m.add_function(wrap_pyfunction!(warnings, m)?)?;
    m.add_function(wrap_pyfunction!(default_config, m)?)?;
    m.add_function(wrap_pyfunction!(fabrics, m)?)?;
    m.add_function(wrap_pyfunction!(statistics, m)?)?;
    m.add_function(wrap_pyfunction!(models, m)?)?;
    m.add_function(wrap_pyfunction!(model_report, m)?)?;
    m.add_function(wrap_pyfunction!(csv::write_csv, m)?)?;
    Ok(())
}
