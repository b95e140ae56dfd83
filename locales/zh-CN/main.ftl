# 思考日志通知（管理员可见）
notice-tool-failed-title = 工具调用失败
notice-tool-stopped-title = 工具已被 /kill 停止
notice-deliberate-title = 触发词允许了工具
notice-progress-title = 静默回合进度
notice-caught-up-title = 已补读机器人离线期间的消息
notice-field-tool = 工具
notice-field-kind = 类型
notice-field-code = 代码
notice-field-reason = 原因
notice-field-arguments = 参数（已脱敏）
notice-field-effect = 影响
notice-field-trigger = 触发词
notice-field-channel = 频道
notice-field-progress = 进度
notice-ending-done = 已完成：工具在停止前已完成其操作。
notice-ending-cancelled = 已取消：工具在完成操作前已停止。
notice-ending-may-still-finish = 可能仍会完成：工具没有响应停止指令，其操作可能仍会发生。没有进行任何回滚。
notice-kind-unknown-tool = 未知工具
notice-kind-invalid-arguments = 参数无效
notice-kind-denied = 权限被拒绝
notice-kind-truncated = 参数被截断（未执行）
notice-kind-blocked = 执行前被拦截
notice-kind-execution = 执行失败
notice-kind-business = 工具拒绝了请求
notice-kind-timed-out = 超时

# 工具运行时在对话中显示的进度
progress-generic = 正在执行 { $tool }…
progress-plan-image = 🎨 正在规划图片…
progress-fetch-older-messages = 📜 正在读取更早的消息…

# 恢复建议（错误回复与失败的工具共用）
tip-rate-limited-wait = 服务商繁忙，请稍等一分钟后再试。
tip-balance-top-up = 服务商账户余额不足，需要机器人管理员充值。
tip-balance-other-key = 机器人管理员可以添加其他 API 密钥或更换服务商。
tip-unauthorized-check-key = 机器人管理员应检查服务商 API 密钥。
tip-model-unknown-check-name = 机器人管理员应检查配置的模型名称。
tip-context-shorter = 请尝试缩短消息或开始新的对话。
tip-safety-rephrase = 请求被服务商的安全策略拒绝，请换一种说法再试。
tip-invalid-request-rephrase = 请换一种说法再试。
tip-missing-model-install = 机器人管理员需要安装图像工作流所用的模型文件。
tip-timeout-retry-later = 服务商未及时响应，请稍后再试。
tip-server-error-retry-later = 服务商发生内部错误，请稍后再试。
tip-network-check-endpoint = 无法连接服务商，机器人管理员应检查接口地址。
tip-reply-too-long-shorter = 请重试，或要求更简短的回答。

# 对话中的回合通知
turn-pass-limit = 我只能停在这里：这次回复的步骤太多了。
turn-failure-limit = 我停下了：工具连续多次失败。
turn-provider-error = 我现在无法回复。{ $reason }
turn-empty-response = 我没能想出回复，请再试一次。
settings-unavailable = 我现在读取不到设置，暂时无法回答。请过一分钟再问一次。
turn-crashed = 我这边出了问题，所以中止了这条回复。请再试一次。
turn-queue-dropped = 这里等待的消息太多，我跳过了这条。请稍后再发送一次。
turn-plans-incomplete = 我承诺的部分图片没有被规划：{ $missing }。

# 服务商失败原因（面向用户）
error-rate-limited = AI 服务当前繁忙。
error-insufficient-balance = AI 服务账户余额不足。
error-unauthorized = AI 服务拒绝了机器人的凭据。
error-model-unknown = 配置的 AI 模型不可用。
error-context-too-long = 对话对 AI 模型来说太长了。
error-safety-refusal = AI 服务根据其安全策略拒绝了此请求。
error-invalid-request = AI 服务拒绝了该请求。
error-missing-model-file = 图像服务缺少模型文件。
error-timeout = AI 服务未及时响应。
error-server-error = AI 服务发生内部错误。
error-network-error = 无法连接 AI 服务。
error-reply-too-long = AI 服务的回答过长，我已将其中止。

# 斜杠命令：名称为小写且无空格
cmd-kill-name = 停止
cmd-kill-description = 停止机器人在此频道中的回复
cmd-drafting-name = 草稿
cmd-drafting-description = 为本服务器开启或关闭回复草稿（Response Drafting）
cmd-drafting-state-name = 状态
cmd-drafting-state-description = 开启或关闭
cmd-thoughtlog-name = 思考日志
cmd-thoughtlog-description = 选择管理员查看机器人行为的隐藏频道
cmd-thoughtlog-set-name = 设置
cmd-thoughtlog-set-description = 将一个频道用作思考日志
cmd-thoughtlog-set-channel-name = 频道
cmd-thoughtlog-set-channel-description = @everyone 无法查看的频道
cmd-thoughtlog-off-name = 关闭
cmd-thoughtlog-off-description = 停止向思考日志发帖
cmd-thoughtlog-summaries-name = 摘要
cmd-thoughtlog-summaries-description = 哪些结束的回合向思考日志发布摘要
cmd-thoughtlog-summaries-mode-name = 范围
cmd-thoughtlog-summaries-mode-description = off、problems（未正常结束的回合，默认）或 all

# 命令回复
kill-stopped = 已停止正在进行的回复。
kill-stopped-own = 已停止正在进行的给你的回复。
kill-tool-done = 工具 `{ $tool }` 已经完成，其操作已执行。
kill-tool-cancelled = 工具 `{ $tool }` 在完成前已被取消。
kill-tool-may-still-finish = 工具 `{ $tool }` 没有响应停止请求，其操作可能仍会完成。
kill-dropped-own = 已丢弃你的等待消息：{ $count } 条。
kill-dropped-all = 已丢弃所有人的等待消息：{ $count } 条。
kill-nothing = 这里没有正在运行的内容。
kill-denied = 只有发起请求的人或拥有管理消息权限的人才能停止。
drafting-on = 回复草稿已开启：回复和工具请求会在发布前经过审核。
drafting-off = 回复草稿已关闭：回复会边写边发送。
thoughtlog-set = 思考日志已设为 { $channel }。
thoughtlog-public = { $channel } 对所有人可见，不能用作思考日志。请选择 @everyone 无法查看的频道。
thoughtlog-off = 思考日志已关闭。
thoughtlog-summaries = 思考日志的回合摘要：{ $mode }。
summaries-off = 不发布
summaries-problems = 仅未正常结束的回合（错误、上限、停止）
summaries-all = 每个回合
command-needs-manage-server = 此操作需要“管理服务器”权限。
command-server-only = 此命令只能在服务器中使用。
command-failed = 执行此命令时出错，请重试。

# 思考日志：每个回合的摘要
notice-turn-title = 回合摘要
notice-field-status = 状态
notice-field-passes = 轮次
notice-field-tool-calls = 工具调用
notice-field-duration = 耗时
notice-field-tokens = 令牌（提示 / 回复）
notice-field-reviews = 审核
image-failed = 我没能生成计划中的图片。{ $reason }
reminder-trigger = [提醒时间到] 请用你自己的话把这个提醒告诉 { $whom }：{ $text }
reminder-everyone = 这里的各位
reminder-not-delivered = 你在 { $channel } 设置的提醒未能送达：我已不能在该频道发言。请联系管理员，或在我能发言的地方重新设置。
cmd-reminders-name = 提醒
cmd-reminders-description = 列出或取消你的提醒
cmd-reminders-list-name = 列表
cmd-reminders-list-description = 显示你设置的或发给你的提醒
cmd-reminders-cancel-name = 取消
cmd-reminders-cancel-description = 取消一个提醒
cmd-reminders-cancel-id-name = 编号
cmd-reminders-cancel-id-description = /提醒 列表 中显示的编号
reminders-none = 你没有提醒。
reminders-title = 你的提醒：
reminders-cancelled = 提醒 #{ $id } 已取消。
reminders-not-yours = 没有你设置的或发给你的提醒 #{ $id }。
# /reminders list 的一行。
reminders-line = `#{ $id }` { $when } ({ $zone }, { $repeat ->
        [daily] 每天
        [weekly] 每周
       *[once] 一次
    }) — { $text }

# /random: random quiet turns for a server.
cmd-random-name = 随机
cmd-random-description = 开启或关闭本服务器的随机发言
cmd-random-state-name = 状态
cmd-random-state-description = on 或 off
cmd-random-percent-name = 概率
cmd-random-percent-description = 每条消息的概率（百分比，1-100）
cmd-random-per_hour-name = 每小时上限
cmd-random-per_hour-description = 每小时最多几次（1-60）
random-on = 随机发言已开启：在允许的频道中每条消息有 { $percent }% 的概率，每小时最多 { $per_hour } 次。
random-off = 随机发言已关闭。
notice-field-channels-read = 读取的频道
notice-field-missed = 未回复的发给机器人的消息
notice-field-answered = 已排队待回复
rate-limited = 你发送消息的速度超过了我的回复速度，接下来一分钟内我会跳过一些消息。请稍后再试。
notice-quiet-skipped-title = 提醒未送达
notice-quiet-skipped-reason = 该频道的访问规则不允许机器人在此发言。
reply-cut-note = *（此回复已达到长度上限，到此为止。）*
notice-reply-cut-title = 一条回复在长度上限处被截断
notice-reply-cut-reason = 模型在 provider.max_tokens 处停止，回复中已注明。需要更长的回复请调高 provider.max_tokens。
notice-context-trimmed-title = 为适应模型的上下文，省略了较早的消息
notice-field-left-out = 省略的消息
cmd-memory-name = 记忆
cmd-memory-description = 查看并删除我记得的关于你或本服务器的事
cmd-memory-show-name = 查看
cmd-memory-show-description = 我记得的关于你的事
cmd-memory-server-name = 服务器
cmd-memory-server-description = 我记得的关于本服务器的事（管理服务器）
cmd-memory-forget-name = 忘记
cmd-memory-forget-description = 按编号忘记一条，或忘记你的全部
cmd-memory-forget-target-name = 目标
cmd-memory-forget-target-description = /memory show 中的编号，或 "all"
cmd-forget-me-name = 忘记我
cmd-forget-me-description = 在所有地方忘记我记得的关于你的一切
memory-none = 在这里我什么都不记得。
memory-title = 我记得：
memory-line = #{ $id } { $text }
memory-forget-what = 请给出 /memory show 中的编号，或 "all"。
memory-forgotten = 已忘记 { $count } 条。
memory-forgot-nothing = 没有可忘记的：这里没有你的这条记忆。
forget-me-done = 完成：已在所有服务器和私信中忘记关于你的 { $count } 条记忆。
cmd-channels-name = 频道
cmd-channels-description = 我在哪里回答：允许、屏蔽或总是回答某频道，或清除其规则
cmd-channels-rule-name = 规则
cmd-channels-rule-description = allow（只回答允许的频道）、block、always（每条消息）或 clear
cmd-channels-channel-name = 频道
cmd-channels-channel-description = 目标频道
cmd-roles-name = 身份组
cmd-roles-description = 我回答谁：允许或屏蔽某身份组，或清除其规则
cmd-roles-rule-name = 规则
cmd-roles-rule-description = allow（只回答有允许身份组的成员）、block 或 clear
cmd-roles-role-name = 身份组
cmd-roles-role-description = 目标身份组
cmd-access-name = 访问
cmd-access-description = 本服务器的访问规则（屏蔽优先于允许）
access-set = 完成：已将 { $target } 设为 { $rule }。
access-full = 该列表已满（200 项），请先清除一些。{ $target } 未改变。
access-show = 访问规则（屏蔽优先于允许）：
    - 允许的频道：{ $allowed_channels }
    - 屏蔽的频道：{ $blocked_channels }
    - 总是回答：{ $always_channels }
    - 允许的身份组：{ $allowed_roles }
    - 屏蔽的身份组：{ $blocked_roles }
notice-settings-title = 设置已更改
notice-field-by = 操作者
notice-field-change = 更改
cmd-status-name = 状态
cmd-status-description = 我在这里的设置：角色、模型、回复审核、队列、提醒
cmd-help-name = 帮助
cmd-help-description = 我能做什么、如何与我交谈、你可用的命令
status-yes = 是
status-no = 否
status-text = **状态**
    - 角色：{ $persona }
    - 模型：{ $model }
    - 回复审核：{ $drafting }
    - 思考日志：{ $thought_log }
    - 回合摘要：{ $summaries }
    - 回复样式：{ $replies }
    - 状态表情回应：{ $reactions }
    - 回复上的按钮：{ $buttons }
    - 此处正在回答：{ $running }；等待中：{ $waiting }
    - 我能在此发言：{ $can_post }
    - 你的提醒：{ $reminders }
status-no-content = Discord 不向我提供不是发给我的消息的文本（没有 Message Content 权限）：我会回复提及、对我的回复、私信和命令；触发词、总是回复的频道、不带提及的后续消息和随机回复已关闭。
help-text = 我是 { $persona }。提及我、回复我的消息或私信我，我就会回答；我回答你时你在这里写的内容都属于同一段对话。我可以记住事情、设置提醒和规划图片。
    - /kill：停止我在这里做的事。
    - /reminders list|cancel：你的提醒。
    - /memory show|forget：我记得的关于你的事；/forget-me 在所有地方全部忘记。
    - /status：我在这里的设置。
help-managers = 有“管理服务器”权限时：/channels、/roles 和 /access（我在哪里、对谁回答）、/persona、/tools、/drafting、/thoughtlog、/random、/replies、/memory server。
cmd-tools-name = 工具
cmd-tools-description = 审慎工具模式：只在消息需要时提供工具
cmd-tools-deliberate-name = 审慎
cmd-tools-deliberate-description = 为本服务器开启或关闭审慎工具模式
cmd-tools-deliberate-state-name = 状态
cmd-tools-deliberate-state-description = on 或 off
cmd-tools-phrases-name = 短语
cmd-tools-phrases-description = 添加或删除在审慎模式下提供某工具的短语
cmd-tools-phrases-action-name = 操作
cmd-tools-phrases-action-description = add 或 remove
cmd-tools-phrases-tool-name = 工具
cmd-tools-phrases-tool-description = 该短语提供的工具
cmd-tools-phrases-phrase-name = 短语
cmd-tools-phrases-phrase-description = 消息中出现即提供该工具的词语（不区分大小写）
cmd-tools-show-name = 查看
cmd-tools-show-description = 审慎工具模式和本服务器自己的短语
tools-deliberate-on = 审慎工具模式已开启：只在消息需要时提供工具。
tools-deliberate-off = 审慎工具模式已关闭：提供所有工具。
tools-phrase-added = 已添加：“{ $phrase }”会提供 { $tool }。
tools-phrase-refused = 未添加：{ $tool } 已有 20 个短语，或短语为空。
tools-phrase-removed = 已删除：“{ $phrase }”不再提供 { $tool }。
tools-show = 审慎工具模式：{ $state }。本服务器自己的短语（内置短语同样有效）：
cmd-drafting-check-name = 审核内容
cmd-drafting-check-description = 审核什么：tools（工具请求）、replies（回复）或 both（两者）
cmd-drafting-model-name = 模型
cmd-drafting-model-description = 本服务器的审核模型：从配置的模型中选择，或 "default"
drafting-model-refused = `{ $model }` 不是本机器人的模型，因此未做任何更改。请从以下模型中选择：{ $allowed }（或 "default"）。
drafting-details = 审核内容：{ $check }；本服务器的审核模型：{ $model }；审核指示：{ $prompt }。
cmd-drafting-prompt-name = 指示
cmd-drafting-prompt-description = edit：在表单中编辑审核指示；default：使用配置的指示
drafting-prompt-title = 审核指示
drafting-prompt-label = 指示（留空则使用默认指示）
drafting-prompt-own = 本服务器自定义
drafting-prompt-default = 默认
cmd-persona-name = 人设
cmd-persona-description = 本服务器的人设：选择、查看、编辑
cmd-persona-list-name = 列表
cmd-persona-list-description = 本服务器可以使用的人设
cmd-persona-use-name = 使用
cmd-persona-use-description = 在这里以该人设说话（使用它的新副本）
cmd-persona-use-name-name = 名称
cmd-persona-use-name-description = /persona list 中显示的人设 ID 或名称
cmd-persona-show-name = 查看
cmd-persona-show-description = 本服务器的人设，以及它在这里如何发言
cmd-persona-edit-name = 编辑
cmd-persona-edit-description = 在表单中编辑本服务器的人设：名称、提示词、触发词、头像
persona-list-title = 本服务器可以使用的人设（/persona use <ID>）：
persona-list-line = - { $id }：{ $name }
persona-list-line-here = - { $id }：{ $name }（本服务器正在使用）
persona-unknown = 没有名为"{ $name }"的人设。人设：{ $ids }。
persona-used = 本服务器现在以 { $name } 说话：这是 { $id } 的本服务器专用副本，/persona edit 的修改只影响本服务器。
persona-show = 人设：{ $name }（{ $origin }，来自 { $id }）
    触发词：{ $words }
    头像：{ $avatar }
    在此频道中它{ $voice }发言。
    系统提示词：
persona-origin-own = 本服务器专用副本
persona-origin-default = 默认
persona-voice-webhook = 通过 Webhook 以自己的名称和头像
persona-voice-bot = 以机器人用户身份（若在此拥有"管理 Webhook"权限，则会以自己的名称和头像）
persona-edit-title = 编辑本服务器的人设
persona-field-name = 名称
persona-field-prompt = 系统提示词
persona-field-words = 触发词，用逗号分隔
persona-field-avatar = 头像地址（https://…）
persona-saved = 已保存：本服务器现在以 { $name } 说话。其他服务器不受影响。
persona-problem-no-name = 未做修改：人设需要一个名称。
persona-problem-reserved-name = 未做修改：Discord 不允许名称中含有"discord"或"clyde"，也不允许使用"everyone"和"here"。
persona-problem-avatar = 未做修改：头像必须是 https:// 地址。
cmd-memory-show-member-name = 成员
cmd-memory-show-member-description = 有"管理服务器"权限时：我记得的关于该成员的事
persona-problem-no-prompt = 未做修改：人设需要系统提示词。
cmd-replies-name = 回复
cmd-replies-description = 在此服务器上我的回复如何分成消息
cmd-replies-style-name = 样式
cmd-replies-style-description = 选择回复的分法：paragraphs、compact 或默认
cmd-replies-style-style-name = 样式
cmd-replies-style-style-description = paragraphs（像人发消息一样分几条）、compact（按长度需要的最少条数）或 default
replies-style-set = 此处的回复：{ $style }。
reply-style-paragraphs = paragraphs（分几条，短段落合在一起）
reply-style-compact = compact（按长度需要的最少条数）
reply-style-default = { $style }（默认）
cmd-replies-reactions-name = 表情回应
cmd-replies-reactions-description = 在我回答的消息上显示状态表情：处理中 👀，工具运行中 ⚙️，失败 ❌
cmd-replies-reactions-state-name = 状态
cmd-replies-reactions-state-description = on 或 off
replies-reactions-on = 此处已开启状态表情回应：我处理消息时加 👀，工具运行时加 ⚙️，回复发出后移除；失败时保留 ❌。
replies-reactions-off = 此处已关闭状态表情回应。
cmd-replies-buttons-name = 按钮
cmd-replies-buttons-description = 我回复上的按钮：写作时可停止，之后可重来、👍 和 👎
cmd-replies-buttons-state-name = 状态
cmd-replies-buttons-state-description = on 或 off
replies-buttons-on = 此处已开启按钮：我写回复时有「停止」，之后有「重来」（仅提问者）和 👍/👎（任何人），有效 15 分钟。
replies-buttons-off = 此处已关闭按钮：我的回复不带按钮。
status-feedback = 此处对我回复的评价：👍 { $up } · 👎 { $down }
button-stop = 停止
button-again = 重来
button-expired = 这些按钮已过期（有效期 15 分钟）。
button-not-yours-stop = 只有提问者或版主可以停止这条回复。
button-not-yours-again = 只有提问者可以要求换一个回答。
button-no-more-again = 这个问题已经重新回答过 { $max } 次了。
button-stop-nothing = 那条回复已经写完了。
button-again-busy = 我在这个频道里正忙，等我完成后再按「重来」。
button-again-gone = 问题已不存在，无法重新回答。
button-again-unavailable = 现在无法重新回答，请稍后再试。
feedback-noted-up = 谢谢：已记录 👍。
feedback-noted-down = 谢谢：已记录 👎。
feedback-unavailable = 现在无法保存，请稍后再试。
notice-feedback-title = 有成员评价了一条回复
notice-field-verdict = 评价
notice-field-feedback = 这条回复的评价
cmd-tools-approvals-name = 批准
cmd-tools-approvals-description = 此处需要批准的工具调用由谁批准
cmd-tools-approvals-by-name = 批准者
cmd-tools-approvals-by-description = requester（提问者或版主）或 moderators
tools-approvals-requester = 此处的批准由我正在回答的成员或版主决定。
tools-approvals-moderators = 此处的批准仅由版主决定。
cmd-tools-mcp-name = mcp
cmd-tools-mcp-description = 列出 MCP 服务器，或在此启用或停用其工具
cmd-tools-mcp-action-name = action
cmd-tools-mcp-action-description = list、enable 或 disable
cmd-tools-mcp-server-name = server
cmd-tools-mcp-server-description = 服务器名称，如 /tools mcp list 所示
tools-mcp-none = 此机器人没有配置 MCP 服务器。
tools-mcp-line = MCP { $server }：此处启用：{ $here } · 已连接：{ $connected } · 工具：{ $tools } · 最近错误：{ $error }
tools-mcp-unknown = 没有名为“{ $server }”的 MCP 服务器。服务器：{ $servers }
tools-mcp-enabled = 现在此处提供 { $server } 的工具。会改变内容的调用仍需等待批准。
tools-mcp-disabled = 此处不再提供 { $server } 的工具。
approval-card = **需要批准**（`{ $tool }`）
    { $what }
    { $who } 请在 { $minutes } 分钟内按「批准」或「拒绝」；无人回应即视为拒绝。
approval-who-requester = <@{ $requester }> 或版主
approval-who-moderators = 版主
approval-approve = 批准
approval-deny = 拒绝
approval-approved = ✅ 已由 <@{ $by }> 批准。
approval-denied = ❌ 已被 <@{ $by }> 拒绝。
approval-timed-out = ⌛ 无人及时回应：未执行。
approval-withdrawn = 请求已撤回（/kill）。
approval-not-yours = 你不能决定这个请求。
approval-decided = 这个请求已经有了决定。
approval-what-channel-reminder = 为本频道所有人设置提醒（{ $when }）：“{ $text }”
approval-what-forget-server-fact = 忘记整个服务器的记忆（事实 #{ $id }）：“{ $text }”
approval-when-in = { $minutes } 分钟后
approval-outside = 以参数 { $arguments } 调用外部工具 { $tool }
approval-when-at = { $at }（{ $zone }）
approval-when-repeat = ，按 { $repeat } 重复
notice-approval-title = 有工具调用请求批准
notice-field-what = 内容
notice-field-outcome = 结果

# /ask (SPEC A5)
cmd-ask-name = 提问
cmd-ask-description = 问我任何问题，我在这里回答
cmd-ask-text-name = 内容
cmd-ask-text-description = 你想问的内容
cmd-ask-private-name = 私密
cmd-ask-private-description = 只有你能看到回答
ask-refused = 我不能在这里回答：此服务器的管理员对我关闭了这个频道或你的身份组。
ask-stopping = 我正在重启。请一分钟后再问。
ask-stopped = 已停止。
ask-no-answer = 我对此没有答案。
ask-cut = 我只能停在这里：Discord 只允许我在 15 分钟内写完对命令的回答。

# Message menus (SPEC A5)
menu-ask-name = 询问这条消息
menu-remember-name = 记住这个
menu-forget-name = 忘记这个
menu-ask-title = 询问这条消息
menu-ask-question = 你的问题
menu-remember-nothing = 这条消息里没有我能记住的关于某人的内容。
menu-remembered = 我会记住的。
menu-remember-full = 我无法再记住关于此人的更多内容；请管理员用 /memory 清理一些。
menu-remember-consent = { $author }，{ $asker } 希望我记住你消息中的这句话：“{ $fact }”。可以吗？
menu-consent-allow = 允许
menu-consent-decline = 拒绝
menu-consent-not-yours = 只有发这条消息的人才能回答。
menu-consent-expired = 此请求已过期；什么也没有记住。
menu-consent-allowed = 已允许：我会记住的。
menu-consent-declined = 已拒绝：什么也没有记住。
menu-forgot = 已忘记从那条消息记住的 { $count } 条内容。
