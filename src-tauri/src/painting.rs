//! How the window paints where OpenGL is only software.
//!
//! Where no GPU driver exists (a virtual machine, a remote desktop, Xvfb), Mesa still offers
//! OpenGL, through `llvmpipe`, whose shaders LLVM compiles at their first use, and whose libraries
//! (`swrast_dri.so`, `libLLVM`, about 100 MB) are read from disk on a cold start. WebKit then
//! composites the page through it: the overview's first frame, after its figures were drawn, took
//! 0.15–0.25 s of a start here, most of it setting up and compiling for that OpenGL.
//!
//! - `GDK_GL=disable` tells GTK to leave OpenGL alone (it otherwise asks GLX, while opening the
//!   display, which visuals OpenGL can use). WebKit, finding no OpenGL in GTK, paints without
//!   hardware acceleration ("Disabled hardware acceleration because GTK failed to initialize GL",
//!   in the log): the first frame follows the figures within milliseconds. The overview painted
//!   0.91 s after a cold start instead of 1.07, 0.61 s warm instead of 0.67 (medians of five,
//!   alternating: docs/BENCHMARKS.md, "First paint"). WebKit's own switch for that,
//!   `WEBKIT_DISABLE_COMPOSITING_MODE`, made cold starts 0.3 s slower: WebKit then set up EGL in
//!   the app's process before starting its web process.
//! - `WEBKIT_SKIA_ENABLE_CPU_RENDERING=1`: where WebKit does composite through software OpenGL
//!   (a person who turns GTK's OpenGL back on), its Skia paints on the CPU instead of compiling
//!   shaders for `llvmpipe` (0.2 s sooner, measured before the switch above).
//!
//! With a GPU, GTK's and WebKit's own choices stand. "Only software" is judged from what this
//! process can see before GTK starts, without loading any OpenGL library (that alone costs a cold
//! start 0.3 s): no DRM render node (`/dev/dri/renderD*`) or Mesa told to use software
//! (`LIBGL_ALWAYS_SOFTWARE`). A person's own `WEBKIT_SKIA_ENABLE_CPU_RENDERING` or `GDK_GL`, set
//! or empty, leaves both as they are.

use std::ffi::OsString;

/// WebKitGTK's switch to Skia's CPU painting, read by its web process (which inherits this
/// process's environment).
pub const CPU_PAINTING: &str = "WEBKIT_SKIA_ENABLE_CPU_RENDERING";

/// GTK 3's OpenGL flags (`disable`: no OpenGL for the app's windows).
pub const GTK_GL: &str = "GDK_GL";

/// What the start decided, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Painting {
    /// Set by the person (or whoever started the app): left as it is.
    AsSet,
    /// A GPU driver is there: GTK and WebKit choose.
    WebKitChooses,
    /// OpenGL would be software: GTK leaves it alone and Skia paints on the CPU.
    Cpu,
}

impl Painting {
    /// The environment this decision sets, before GTK or WebKit start.
    pub fn environment(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Painting::Cpu => &[(CPU_PAINTING, "1"), (GTK_GL, "disable")],
            Painting::AsSet | Painting::WebKitChooses => &[],
        }
    }
}

/// What to do, from the environment (`var`) and whether a DRM render node exists.
pub fn decide(var: impl Fn(&str) -> Option<OsString>, render_node: bool) -> Painting {
    if var(CPU_PAINTING).is_some() || var(GTK_GL).is_some() {
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

/// Decides and sets the environment for GTK and WebKit's processes. Called first thing in
/// `main`'s [`crate::run`], before any thread is started (setting the environment is then sound)
/// and before GTK opens the display.
pub fn choose() -> Painting {
    if !cfg!(target_os = "linux") {
        return Painting::WebKitChooses;
    }
    let painting = decide(|k| std::env::var_os(k), has_render_node());
    for (name, value) in painting.environment() {
        std::env::set_var(name, value);
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
    fn without_a_render_node_skia_paints_on_the_cpu_and_gtk_leaves_opengl_alone() {
        assert_eq!(decide(env(&[]), false), Painting::Cpu);
        assert_eq!(
            Painting::Cpu.environment(),
            &[(CPU_PAINTING, "1"), (GTK_GL, "disable")]
        );
        assert!(Painting::WebKitChooses.environment().is_empty());
        assert!(Painting::AsSet.environment().is_empty());
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
            for name in [CPU_PAINTING, GTK_GL] {
                assert_eq!(decide(env(&[(name, value)]), false), Painting::AsSet, "{name}");
                assert_eq!(decide(env(&[(name, value)]), true), Painting::AsSet, "{name}");
            }
        }
    }
}
