//! Integration tests: one binary, one module per concern. Every agent here is an in-process stub
//! on a loopback port the OS picks; nothing touches the network.

mod support;

mod agent_exec;
mod agent_results;
mod agent_server;
mod broken;
mod cli;
mod connector;
mod connector_fleet;
mod engine;
mod evidence;
mod evidence_agent_standard;
mod evidence_connector;
mod evidence_execute_task;
mod evidence_librarian;
mod evidence_roundtable;
mod fleet;
mod fleet_file;
mod fuzz;
mod harness_judged;
mod help;
mod hostile;
mod html_report;
mod layers;
mod librarian;
mod librarian_client;
mod librarian_fleet;
mod lint;
mod minimal_agents;
mod platform;
mod properties;
mod readme_table;
mod reference;
mod report_tools;
mod reports;
mod snapshots;
mod socket;
mod stdio;
mod stub_server;
mod targets;
mod task;
mod task_verdicts;
mod toy;
mod toy_protocol;
mod try_it;
