"""torch.fx over module_db: tracing, the pass manager and fx's passes, compared with eager."""
