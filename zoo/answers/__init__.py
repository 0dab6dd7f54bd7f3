"""A zoo.select answer as zoo.select and zoo.report both use it: stored (`stored`: results/answers.json and
results/select-answer.json, read strictly) and as text (`text`: the markdown or plain table). Below both
commands, so neither imports the other."""
