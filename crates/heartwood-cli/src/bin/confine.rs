//! `heartwood-confine`: the Landlock helper bubblewrap starts first inside the sandbox. It
//! restricts itself with the rules its arguments name and becomes the prelude and program;
//! the work is `heartwood_sandbox::confine`'s, kept there beside the rules it reads.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    heartwood_sandbox::confine::main()
}
