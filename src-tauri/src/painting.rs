//! How WebKit paints where OpenGL is only software.
//!
//! WebKitGTK (2.46 and later) paints a page with Skia on the GPU when it can composite. Where no
//! GPU driver exists (a virtual machine, a remote desktop, Xvfb), Mesa gives it OpenGL through
//! `llvmpipe`, whose shaders are compiled by LLVM at their first use: a profile of a start here
//! had WebKit's `SkiaGPUWorker` and compositor threads in `libLLVM` and `llvmpipe`'s compiled code
//! for most of the 0.3 s between the figures drawn and the overview painted. Painting on the CPU
//! there (`WEBKIT_SKIA_ENABLE_CPU_RENDERING=1`, compositing kept) painted the first view 0.2 s
//! sooner cold and warm (docs/BENCHMARKS.md, "First paint"). With a GPU, WebKit's own choice
//! stands.
//!
//! "Only software" is judged from what this process can see before WebKit starts, without
//! loading any OpenGL library (that alone cost a cold start 0.3 s, measured): no DRM render node
//! (`/dev/dri/renderD*`) or Mesa told to use software (`LIBGL_ALWAYS_SOFTWARE`). A person's own
//! `WEBKIT_SKIA_ENABLE_CPU_RENDERING`, set or empty, is always left as it is.

use std::ffi::OsString;

/// WebKitGTK's switch to Skia's CPU painting, read by its web process (which inherits this
/// process's environment).
pub const CPU_PAINTING: &str = "WEBKIT_SKIA_ENABLE_CPU_RENDERING";

/// What the start decided, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Painting {
    /// Set by the person (or whoever started the app): left as it is.
    AsSet,
    /// A GPU driver is there: WebKit chooses.
    WebKitChooses,
    /// OpenGL would be software: Skia paints on the CPU.
    Cpu,
}

/// What to do, from the environment (`var`) and whether a DRM render node exists.
pub fn decide(var: impl Fn(&str) -> Option<OsString>, render_node: bool) -> Painting {
    if var(CPU_PAINTING).is_some() {
        return Painting::AsSet;
    }
    let told_software = var("LIBGL_ALWAYS_SOFTWARE")
        .is_some_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"));
    if told_software || !render_node {
        Painting::Cpu
    } else {
        Painting::WebKitChooses
    }
}

/// Whether this machine has a DRM render node, i.e. a GPU driver Mesa could use.
fn has_render_node() -> bool {
    std::fs::read_dir("/dev/dri").is_ok_and(|dir| {
        dir.filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with("renderD"))
    })
}

/// Decides and sets the environment for WebKit's processes. Called first thing in `main`'s
/// [`crate::run`], before any thread is started (setting the environment is then sound).
pub fn choose() -> Painting {
    if !cfg!(target_os = "linux") {
        return Painting::WebKitChooses;
    }
    let painting = decide(|k| std::env::var_os(k), has_render_node());
    if painting == Painting::Cpu {
        std::env::set_var(CPU_PAINTING, "1");
    }
    painting
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| pairs.iter().find(|(name, _)| name == k).map(|(_, v)| v.into())
    }

    #[test]
    fn without_a_render_node_skia_paints_on_the_cpu() {
        assert_eq!(decide(env(&[]), false), Painting::Cpu);
    }

    #[test]
    fn with_a_render_node_webkit_chooses() {
        assert_eq!(decide(env(&[]), true), Painting::WebKitChooses);
    }

    #[test]
    fn mesa_told_to_use_software_paints_on_the_cpu_even_with_a_gpu() {
        assert_eq!(
            decide(env(&[("LIBGL_ALWAYS_SOFTWARE", "1")]), true),
            Painting::Cpu
        );
        assert_eq!(
            decide(env(&[("LIBGL_ALWAYS_SOFTWARE", "true")]), true),
            Painting::Cpu
        );
        for off in ["0", "", "false"] {
            assert_eq!(
                decide(env(&[("LIBGL_ALWAYS_SOFTWARE", off)]), true),
                Painting::WebKitChooses,
                "{off:?}"
            );
        }
    }

    #[test]
    fn a_persons_own_setting_is_left_as_it_is() {
        for value in ["0", "1", ""] {
            assert_eq!(decide(env(&[(CPU_PAINTING, value)]), false), Painting::AsSet);
            assert_eq!(decide(env(&[(CPU_PAINTING, value)]), true), Painting::AsSet);
        }
    }
}
