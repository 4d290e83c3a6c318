"""What each setting brings to the one builder (``experiments/setting.py``): its tasks, evaluation splits, runners and
rewriter, named by ``setting.parts`` in ``experiments/conf/setting/<name>.yaml``. One module per setting."""
