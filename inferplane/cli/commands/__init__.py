"""The `inferplane` commands, one module per verb (or per family: `metrics`, `function`, `package`);
`inferplane.cli.main` registers them. Each imports the engine, admission and YAML inside the command,
so that `inferplane --help` and shell completion answer at once."""
