//! The resource planner: a model's declared memory need against this machine's memory (and
//! its largest GPU's, where `nvidia-smi` reports one). A model that cannot fit is refused with
//! the numbers before anything is downloaded, imported or started.

use crate::ModelError;

/// What this machine offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    /// Total memory (`MemTotal`).
    pub memory_bytes: u64,
    /// The largest GPU's memory, when there is one.
    pub gpu_memory_bytes: Option<u64>,
}

impl Machine {
    /// Reads this machine's figures (`/proc/meminfo`, `nvidia-smi` when installed).
    pub fn read() -> Machine {
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(0, |kb| kb * 1024);
        Machine {
            memory_bytes,
            gpu_memory_bytes: gpu_memory(),
        }
    }
}

fn gpu_memory() -> Option<u64> {
    let out = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=memory.total", "--format=csv,noheader,nounits"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .max()
        .map(|mib| mib << 20)
}

/// Does a model needing `need` bytes fit `machine`? The error names both figures and what to do.
pub fn check_fits(name: &str, need: u64, machine: Machine) -> Result<(), ModelError> {
    let best = machine
        .memory_bytes
        .max(machine.gpu_memory_bytes.unwrap_or(0));
    if machine.memory_bytes == 0 || need <= best {
        // A machine whose memory cannot be read is not refused on a guess.
        return Ok(());
    }
    let gpu = machine
        .gpu_memory_bytes
        .map(|g| format!(", its largest GPU {}", human_bytes(g)))
        .unwrap_or_default();
    Err(ModelError::Invalid(format!(
        "model {name} needs {} of memory; this machine has {}{gpu}. Choose a smaller model or \
         quantization; nothing was downloaded or started",
        human_bytes(need),
        human_bytes(machine.memory_bytes)
    )))
}

/// Bytes for people: `512 B`, `3.4 KiB`, `12.0 MiB`, `7.2 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    let units = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    match units.iter().find(|(size, _)| bytes >= *size) {
        Some((size, unit)) => format!("{:.1} {unit}", bytes as f64 / *size as f64),
        None => format!("{bytes} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_larger_than_every_memory_is_refused_with_the_numbers() {
        let machine = Machine {
            memory_bytes: 8 << 30,
            gpu_memory_bytes: Some(24 << 30),
        };
        check_fits("m", 20 << 30, machine).expect("should succeed");
        let err = check_fits("m", 40 << 30, machine)
            .expect_err("should fail")
            .to_string();
        assert!(
            err.contains("40.0 GiB") && err.contains("8.0 GiB") && err.contains("24.0 GiB"),
            "{err}"
        );
        assert!(
            Machine::read().memory_bytes > 0,
            "this machine's memory is readable"
        );
    }
}
