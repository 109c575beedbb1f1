//! `agent-tck proxy`: the kit between a real platform and real agents. The platform is given
//! the proxy's URL for each agent (`http://HOST:PORT/agents/NAME`); each of its requests is
//! passed on to the agent's real URL and the answer passed back, bent by the `--fault`s the
//! user asked for. Both parties are judged from that traffic by the rules the kit already
//! has: the platform's requests by its protocol's platform rules (the mock fleet's observer),
//! each agent's answers by its agent rules (the probe suite's cases for ordinary traffic).
//! Where the platform is a server its agents call, the proxy stands before that server
//! instead ([`server`]): the agents' requests judged by the client rules, the server's
//! answers by the server rules. The engine names no protocol.

pub mod bend;
pub mod forward;
pub mod handler;
pub mod judge;
pub mod judging;
pub mod relay;
pub mod replay;
pub mod report;
pub mod run;
pub mod server;
pub mod settings;
pub mod share;
pub mod stdio;
