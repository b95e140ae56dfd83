# 思考日誌通知（管理員可見）
notice-tool-failed-title = 工具呼叫失敗
notice-tool-stopped-title = 工具已被 /kill 停止
notice-deliberate-title = 觸發詞允許了工具
notice-progress-title = 靜默回合進度
notice-caught-up-title = 已補讀機器人離線期間的訊息
notice-field-tool = 工具
notice-field-kind = 類型
notice-field-code = 代碼
notice-field-reason = 原因
notice-field-arguments = 參數（已遮蔽）
notice-field-effect = 影響
notice-field-trigger = 觸發詞
notice-field-channel = 頻道
notice-field-progress = 進度
notice-ending-done = 已完成：工具在停止前已完成其操作。
notice-ending-cancelled = 已取消：工具在完成操作前已停止。
notice-ending-may-still-finish = 可能仍會完成：工具沒有回應停止指令，其操作可能仍會發生。沒有進行任何復原。
notice-kind-unknown-tool = 未知工具
notice-kind-invalid-arguments = 參數無效
notice-kind-denied = 權限遭拒
notice-kind-truncated = 參數被截斷（未執行）
notice-kind-blocked = 執行前遭攔截
notice-kind-execution = 執行失敗
notice-kind-business = 工具拒絕了請求
notice-kind-timed-out = 逾時

# 工具執行時在對話中顯示的進度
progress-generic = 正在執行 { $tool }…
progress-plan-image = 🎨 正在規劃圖片…
progress-fetch-older-messages = 📜 正在讀取更早的訊息…

# 復原建議（錯誤回覆與失敗的工具共用）
tip-rate-limited-wait = 服務商繁忙，請稍候一分鐘再試。
tip-balance-top-up = 服務商帳戶餘額不足，需要機器人管理員儲值。
tip-balance-other-key = 機器人管理員可以新增其他 API 金鑰或更換服務商。
tip-unauthorized-check-key = 機器人管理員應檢查服務商 API 金鑰。
tip-model-unknown-check-name = 機器人管理員應檢查設定的模型名稱。
tip-context-shorter = 請嘗試縮短訊息或開始新的對話。
tip-safety-rephrase = 請求被服務商的安全政策拒絕，請換個說法再試。
tip-invalid-request-rephrase = 請換個說法再試。
tip-missing-model-install = 機器人管理員需要安裝圖像工作流程所用的模型檔案。
tip-timeout-retry-later = 服務商未及時回應，請稍後再試。
tip-server-error-retry-later = 服務商發生內部錯誤，請稍後再試。
tip-network-check-endpoint = 無法連線到服務商，機器人管理員應檢查端點位址。
tip-reply-too-long-shorter = 請重試，或要求更簡短的回答。

# 對話中的回合通知
turn-pass-limit = 我只能停在這裡：這次回覆的步驟太多了。
turn-failure-limit = 我停下了：工具連續多次失敗。
turn-provider-error = 我現在無法回覆。{ $reason }
turn-empty-response = 我沒能想出回覆，請再試一次。
settings-unavailable = 我現在讀取不到設定，暫時無法回答。請過一分鐘再問一次。
turn-crashed = 我這邊出了問題，所以中止了這則回覆。請再試一次。
turn-queue-dropped = 這裡等待的訊息太多，我跳過了這則。請稍後再傳送一次。
turn-plans-incomplete = 我承諾的部分圖片沒有被規劃：{ $missing }。

# 服務商失敗原因（面向使用者）
error-rate-limited = AI 服務目前繁忙。
error-insufficient-balance = AI 服務帳戶餘額不足。
error-unauthorized = AI 服務拒絕了機器人的憑證。
error-model-unknown = 設定的 AI 模型無法使用。
error-context-too-long = 對話對 AI 模型來說太長了。
error-safety-refusal = AI 服務依其安全政策拒絕了此請求。
error-invalid-request = AI 服務拒絕了該請求。
error-missing-model-file = 圖像服務缺少模型檔案。
error-timeout = AI 服務未及時回應。
error-server-error = AI 服務發生內部錯誤。
error-network-error = 無法連線到 AI 服務。
error-reply-too-long = AI 服務的回答過長，我已將其中止。

# 斜線指令：名稱為小寫且無空格
cmd-kill-name = 停止
cmd-kill-description = 停止機器人在此頻道中的回覆
cmd-drafting-name = 草稿
cmd-drafting-description = 為本伺服器開啟或關閉回覆草稿（Response Drafting）
cmd-drafting-state-name = 狀態
cmd-drafting-state-description = 開啟或關閉
cmd-thoughtlog-name = 思考日誌
cmd-thoughtlog-description = 選擇管理員查看機器人行為的隱藏頻道
cmd-thoughtlog-set-name = 設定
cmd-thoughtlog-set-description = 將一個頻道用作思考日誌
cmd-thoughtlog-set-channel-name = 頻道
cmd-thoughtlog-set-channel-description = @everyone 無法檢視的頻道
cmd-thoughtlog-off-name = 關閉
cmd-thoughtlog-off-description = 停止向思考日誌發文
cmd-thoughtlog-summaries-name = 摘要
cmd-thoughtlog-summaries-description = 哪些結束的回合向思考日誌發布摘要
cmd-thoughtlog-summaries-mode-name = 範圍
cmd-thoughtlog-summaries-mode-description = off、problems（未正常結束的回合，預設）或 all

# 指令回覆
kill-stopped = 已停止進行中的回覆。
kill-stopped-own = 已停止進行中給你的回覆。
kill-tool-done = 工具 `{ $tool }` 已經完成，其操作已執行。
kill-tool-cancelled = 工具 `{ $tool }` 在完成前已被取消。
kill-tool-may-still-finish = 工具 `{ $tool }` 沒有回應停止要求，其操作可能仍會完成。
kill-dropped-own = 已捨棄你的等待訊息：{ $count } 則。
kill-dropped-all = 已捨棄所有人的等待訊息：{ $count } 則。
kill-nothing = 這裡沒有正在執行的內容。
kill-denied = 只有提出請求的人或擁有管理訊息權限的人才能停止。
drafting-on = 回覆草稿已開啟：回覆和工具請求會在發布前經過審核。
drafting-off = 回覆草稿已關閉：回覆會邊寫邊傳送。
thoughtlog-set = 思考日誌已設為 { $channel }。
thoughtlog-public = { $channel } 對所有人可見，不能用作思考日誌。請選擇 @everyone 無法檢視的頻道。
thoughtlog-off = 思考日誌已關閉。
thoughtlog-summaries = 思考日誌的回合摘要：{ $mode }。
summaries-off = 不發布
summaries-problems = 僅未正常結束的回合（錯誤、上限、停止）
summaries-all = 每個回合
command-needs-manage-server = 此操作需要「管理伺服器」權限。
command-server-only = 此指令只能在伺服器中使用。
command-failed = 執行此指令時出錯，請再試一次。

# 思考日誌：每個回合的摘要
notice-turn-title = 回合摘要
notice-field-status = 狀態
notice-field-passes = 輪次
notice-field-tool-calls = 工具呼叫
notice-field-duration = 耗時
notice-field-tokens = 權杖（提示 / 回覆）
notice-field-reviews = 審核
image-failed = 我沒能產生計畫中的圖片。{ $reason }
reminder-trigger = [提醒時間到] 請用你自己的話把這個提醒告訴 { $whom }：{ $text }
reminder-everyone = 這裡的各位
reminder-not-delivered = 你在 { $channel } 設定的提醒未能送達：我已不能在該頻道發言。請聯絡管理員，或在我能發言的地方重新設定。
cmd-reminders-name = 提醒
cmd-reminders-description = 列出或取消你的提醒
cmd-reminders-list-name = 列表
cmd-reminders-list-description = 顯示你設定的或給你的提醒
cmd-reminders-cancel-name = 取消
cmd-reminders-cancel-description = 取消一個提醒
cmd-reminders-cancel-id-name = 編號
cmd-reminders-cancel-id-description = /提醒 列表 中顯示的編號
reminders-none = 你沒有提醒。
reminders-title = 你的提醒：
reminders-cancelled = 提醒 #{ $id } 已取消。
reminders-not-yours = 沒有你設定的或給你的提醒 #{ $id }。
# /reminders list 的一行。
reminders-line = `#{ $id }` { $when } ({ $zone }, { $repeat ->
        [daily] 每天
        [weekly] 每週
       *[once] 一次
    }) — { $text }

# /random: random quiet turns for a server.
cmd-random-name = 隨機
cmd-random-description = 開啟或關閉本伺服器的隨機發言
cmd-random-state-name = 狀態
cmd-random-state-description = on 或 off
cmd-random-percent-name = 機率
cmd-random-percent-description = 每則訊息的機率（百分比，1-100）
cmd-random-per_hour-name = 每小時上限
cmd-random-per_hour-description = 每小時最多幾次（1-60）
random-on = 隨機發言已開啟：在允許的頻道中每則訊息有 { $percent }% 的機率，每小時最多 { $per_hour } 次。
random-off = 隨機發言已關閉。
notice-field-channels-read = 讀取的頻道
notice-field-missed = 未回覆的發給機器人的訊息
notice-field-answered = 已排隊待回覆
rate-limited = 你傳送訊息的速度超過了我的回覆速度，接下來一分鐘內我會略過一些訊息。請稍後再試。
notice-quiet-skipped-title = 提醒未送達
notice-quiet-skipped-reason = 該頻道的存取規則不允許機器人在此發言。
reply-cut-note = *（此回覆已達到長度上限，到此為止。）*
notice-reply-cut-title = 一則回覆在長度上限處被截斷
notice-reply-cut-reason = 模型在 provider.max_tokens 處停止，回覆中已註明。需要更長的回覆請調高 provider.max_tokens。
notice-context-trimmed-title = 為配合模型的上下文，省略了較早的訊息
notice-field-left-out = 省略的訊息
cmd-memory-name = 記憶
cmd-memory-description = 查看並刪除我記得的關於你或本伺服器的事
cmd-memory-show-name = 查看
cmd-memory-show-description = 我記得的關於你的事
cmd-memory-server-name = 伺服器
cmd-memory-server-description = 我記得的關於本伺服器的事（管理伺服器）
cmd-memory-forget-name = 忘記
cmd-memory-forget-description = 依編號忘記一則，或忘記你的全部
cmd-memory-forget-target-name = 目標
cmd-memory-forget-target-description = /memory show 中的編號，或 "all"
cmd-forget-me-name = 忘記我
cmd-forget-me-description = 在所有地方忘記我記得的關於你的一切
memory-none = 在這裡我什麼都不記得。
memory-title = 我記得：
memory-line = #{ $id } { $text }
memory-forget-what = 請給出 /memory show 中的編號，或 "all"。
memory-forgotten = 已忘記 { $count } 則。
memory-forgot-nothing = 沒有可忘記的：這裡沒有你的這則記憶。
forget-me-done = 完成：已在所有伺服器和私訊中忘記關於你的 { $count } 則記憶。
cmd-channels-name = 頻道
cmd-channels-description = 我在哪裡回答：允許、封鎖或總是回答某頻道，或清除其規則
cmd-channels-rule-name = 規則
cmd-channels-rule-description = allow（只回答允許的頻道）、block、always（每則訊息）或 clear
cmd-channels-channel-name = 頻道
cmd-channels-channel-description = 目標頻道
cmd-roles-name = 身分組
cmd-roles-description = 我回答誰：允許或封鎖某身分組，或清除其規則
cmd-roles-rule-name = 規則
cmd-roles-rule-description = allow（只回答有允許身分組的成員）、block 或 clear
cmd-roles-role-name = 身分組
cmd-roles-role-description = 目標身分組
cmd-access-name = 存取
cmd-access-description = 本伺服器的存取規則（封鎖優先於允許）
access-set = 完成：已將 { $target } 設為 { $rule }。
access-full = 該清單已滿（200 項），請先清除一些。{ $target } 未改變。
access-show = 存取規則（封鎖優先於允許）：
    - 允許的頻道：{ $allowed_channels }
    - 封鎖的頻道：{ $blocked_channels }
    - 總是回答：{ $always_channels }
    - 允許的身分組：{ $allowed_roles }
    - 封鎖的身分組：{ $blocked_roles }
notice-settings-title = 設定已變更
notice-field-by = 變更者
notice-field-change = 變更
cmd-status-name = 狀態
cmd-status-description = 我在這裡的設定：角色、模型、回覆審核、佇列、提醒
cmd-help-name = 說明
cmd-help-description = 我能做什麼、如何與我交談、你可用的指令
status-yes = 是
status-no = 否
status-text = **狀態**
    - 角色：{ $persona }
    - 模型：{ $model }
    - 回覆審核：{ $drafting }
    - 思考日誌：{ $thought_log }
    - 回合摘要：{ $summaries }
    - 回覆樣式：{ $replies }
    - 狀態表情回應：{ $reactions }
    - 回覆上的按鈕：{ $buttons }
    - 此處正在回答：{ $running }；等待中：{ $waiting }
    - 我能在此發言：{ $can_post }
    - 你的提醒：{ $reminders }
status-no-content = Discord 不向我提供不是給我的訊息的文字（沒有 Message Content 權限）：我會回覆提及、對我的回覆、私訊和指令；觸發詞、總是回覆的頻道、不帶提及的後續訊息和隨機回覆已關閉。
help-text = 我是 { $persona }。提及我、回覆我的訊息或私訊我，我就會回答；我回答你時你在這裡寫的內容都屬於同一段對話。我可以記住事情、設定提醒和規劃圖片。
    - /kill：停止我在這裡做的事。
    - /reminders list|cancel：你的提醒。
    - /memory show|forget：我記得的關於你的事；/forget-me 在所有地方全部忘記。
    - /status：我在這裡的設定。
help-managers = 有「管理伺服器」權限時：/channels、/roles 和 /access（我在哪裡、對誰回答）、/persona、/tools、/drafting、/thoughtlog、/random、/replies、/memory server。
cmd-tools-name = 工具
cmd-tools-description = 審慎工具模式：只在訊息需要時提供工具
cmd-tools-deliberate-name = 審慎
cmd-tools-deliberate-description = 為本伺服器開啟或關閉審慎工具模式
cmd-tools-deliberate-state-name = 狀態
cmd-tools-deliberate-state-description = on 或 off
cmd-tools-phrases-name = 短語
cmd-tools-phrases-description = 新增或刪除在審慎模式下提供某工具的短語
cmd-tools-phrases-action-name = 操作
cmd-tools-phrases-action-description = add 或 remove
cmd-tools-phrases-tool-name = 工具
cmd-tools-phrases-tool-description = 該短語提供的工具
cmd-tools-phrases-phrase-name = 短語
cmd-tools-phrases-phrase-description = 訊息中出現即提供該工具的詞語（不分大小寫）
cmd-tools-show-name = 查看
cmd-tools-show-description = 審慎工具模式和本伺服器自己的短語
tools-deliberate-on = 審慎工具模式已開啟：只在訊息需要時提供工具。
tools-deliberate-off = 審慎工具模式已關閉：提供所有工具。
tools-phrase-added = 已新增：「{ $phrase }」會提供 { $tool }。
tools-phrase-refused = 未新增：{ $tool } 已有 20 個短語，或短語為空。
tools-phrase-removed = 已刪除：「{ $phrase }」不再提供 { $tool }。
tools-show = 審慎工具模式：{ $state }。本伺服器自己的短語（內建短語同樣有效）：
cmd-drafting-check-name = 審核內容
cmd-drafting-check-description = 審核什麼：tools（工具請求）、replies（回覆）或 both（兩者）
cmd-drafting-model-name = 模型
cmd-drafting-model-description = 本伺服器的審核模型：從設定的模型中選擇，或 "default"
drafting-model-refused = `{ $model }` 不是本機器人的模型，因此未做任何變更。請從以下模型中選擇：{ $allowed }（或 "default"）。
drafting-details = 審核內容：{ $check }；本伺服器的審核模型：{ $model }；審核指示：{ $prompt }。
cmd-drafting-prompt-name = 指示
cmd-drafting-prompt-description = edit：在表單中編輯審核指示；default：使用設定的指示
drafting-prompt-title = 審核指示
drafting-prompt-label = 指示（留空則使用預設指示）
drafting-prompt-own = 本伺服器自訂
drafting-prompt-default = 預設
cmd-persona-name = 人設
cmd-persona-description = 本伺服器的人設：選擇、查看、編輯
cmd-persona-list-name = 列表
cmd-persona-list-description = 本伺服器可以使用的人設
cmd-persona-use-name = 使用
cmd-persona-use-description = 在這裡以該人設說話（使用它的新副本）
cmd-persona-use-name-name = 名稱
cmd-persona-use-name-description = /persona list 中顯示的人設 ID 或名稱
cmd-persona-show-name = 查看
cmd-persona-show-description = 本伺服器的人設，以及它在這裡如何發言
cmd-persona-edit-name = 編輯
cmd-persona-edit-description = 在表單中編輯本伺服器的人設：名稱、提示詞、觸發詞、頭像
persona-list-title = 本伺服器可以使用的人設（/persona use <ID>）：
persona-list-line = - { $id }：{ $name }
persona-list-line-here = - { $id }：{ $name }（本伺服器正在使用）
persona-unknown = 沒有名為「{ $name }」的人設。人設：{ $ids }。
persona-used = 本伺服器現在以 { $name } 說話：這是 { $id } 的本伺服器專用副本，/persona edit 的修改只影響本伺服器。
persona-show = 人設：{ $name }（{ $origin }，來自 { $id }）
    觸發詞：{ $words }
    頭像：{ $avatar }
    在此頻道中它{ $voice }發言。
    系統提示詞：
persona-origin-own = 本伺服器專用副本
persona-origin-default = 預設
persona-voice-webhook = 透過 Webhook 以自己的名稱和頭像
persona-voice-bot = 以機器人使用者身分（若在此擁有「管理 Webhook」權限，則會以自己的名稱和頭像）
persona-edit-title = 編輯本伺服器的人設
persona-field-name = 名稱
persona-field-prompt = 系統提示詞
persona-field-words = 觸發詞，以逗號分隔
persona-field-avatar = 頭像網址（https://…）
persona-saved = 已儲存：本伺服器現在以 { $name } 說話。其他伺服器不受影響。
persona-problem-no-name = 未做修改：人設需要一個名稱。
persona-problem-reserved-name = 未做修改：Discord 不允許名稱中含有「discord」或「clyde」，也不允許使用「everyone」和「here」。
persona-problem-avatar = 未做修改：頭像必須是 https:// 網址。
cmd-memory-show-member-name = 成員
cmd-memory-show-member-description = 有「管理伺服器」權限時：我記得的關於該成員的事
persona-problem-no-prompt = 未做修改：人設需要系統提示詞。
cmd-replies-name = 回覆
cmd-replies-description = 在此伺服器上我的回覆如何分成訊息
cmd-replies-style-name = 樣式
cmd-replies-style-description = 選擇回覆的分法：paragraphs、compact 或預設
cmd-replies-style-style-name = 樣式
cmd-replies-style-style-description = paragraphs（像人傳訊息一樣分幾則）、compact（依長度需要的最少則數）或 default
replies-style-set = 此處的回覆：{ $style }。
reply-style-paragraphs = paragraphs（分幾則，短段落合在一起）
reply-style-compact = compact（依長度需要的最少則數）
reply-style-default = { $style }（預設）
cmd-replies-reactions-name = 表情回應
cmd-replies-reactions-description = 在我回答的訊息上顯示狀態表情：處理中 👀，工具執行中 ⚙️，失敗 ❌
cmd-replies-reactions-state-name = 狀態
cmd-replies-reactions-state-description = on 或 off
replies-reactions-on = 此處已開啟狀態表情回應：我處理訊息時加 👀，工具執行時加 ⚙️，回覆送出後移除；失敗時保留 ❌。
replies-reactions-off = 此處已關閉狀態表情回應。
cmd-replies-buttons-name = 按鈕
cmd-replies-buttons-description = 我回覆上的按鈕：撰寫時可停止，之後可重來、👍 和 👎
cmd-replies-buttons-state-name = 狀態
cmd-replies-buttons-state-description = on 或 off
replies-buttons-on = 此處已開啟按鈕：我撰寫回覆時有「停止」，之後有「重來」（僅提問者）和 👍/👎（任何人），有效 15 分鐘。
replies-buttons-off = 此處已關閉按鈕：我的回覆不帶按鈕。
status-feedback = 此處對我回覆的評價：👍 { $up } · 👎 { $down }
button-stop = 停止
button-again = 重來
button-expired = 這些按鈕已過期（有效期 15 分鐘）。
button-not-yours-stop = 只有提問者或版主可以停止這則回覆。
button-not-yours-again = 只有提問者可以要求換一個回答。
button-no-more-again = 這個問題已經重新回答過 { $max } 次了。
button-stop-nothing = 那則回覆已經寫完了。
button-again-busy = 我在這個頻道裡正忙，等我完成後再按「重來」。
button-again-gone = 問題已不存在，無法重新回答。
button-again-unavailable = 現在無法重新回答，請稍後再試。
feedback-noted-up = 謝謝：已記錄 👍。
feedback-noted-down = 謝謝：已記錄 👎。
feedback-unavailable = 現在無法儲存，請稍後再試。
notice-feedback-title = 有成員評價了一則回覆
notice-field-verdict = 評價
notice-field-feedback = 這則回覆的評價
cmd-tools-approvals-name = 核准
cmd-tools-approvals-description = 此處需要核准的工具呼叫由誰核准
cmd-tools-approvals-by-name = 核准者
cmd-tools-approvals-by-description = requester（提問者或版主）或 moderators
tools-approvals-requester = 此處的核准由我正在回答的成員或版主決定。
tools-approvals-moderators = 此處的核准僅由版主決定。
cmd-tools-mcp-name = mcp
cmd-tools-mcp-description = 列出 MCP 伺服器，或在此啟用或停用其工具
cmd-tools-mcp-action-name = action
cmd-tools-mcp-action-description = list、enable 或 disable
cmd-tools-mcp-server-name = server
cmd-tools-mcp-server-description = 伺服器名稱，如 /tools mcp list 所示
tools-mcp-none = 此機器人沒有設定 MCP 伺服器。
tools-mcp-line = MCP { $server }：此處啟用：{ $here } · 已連線：{ $connected } · 工具：{ $tools } · 最近錯誤：{ $error }
tools-mcp-unknown = 沒有名為「{ $server }」的 MCP 伺服器。伺服器：{ $servers }
tools-mcp-enabled = 現在此處提供 { $server } 的工具。會改變內容的呼叫仍需等待核准。
tools-mcp-disabled = 此處不再提供 { $server } 的工具。
approval-card = **需要核准**（`{ $tool }`）
    { $what }
    { $who } 請在 { $minutes } 分鐘內按「核准」或「拒絕」；無人回應即視為拒絕。
approval-who-requester = <@{ $requester }> 或版主
approval-who-moderators = 版主
approval-approve = 核准
approval-deny = 拒絕
approval-approved = ✅ 已由 <@{ $by }> 核准。
approval-denied = ❌ 已被 <@{ $by }> 拒絕。
approval-timed-out = ⌛ 無人及時回應：未執行。
approval-withdrawn = 請求已撤回（/kill）。
approval-not-yours = 你不能決定這個請求。
approval-decided = 這個請求已經有了決定。
approval-what-channel-reminder = 為本頻道所有人設定提醒（{ $when }）：「{ $text }」
approval-what-forget-server-fact = 忘記整個伺服器的記憶（事實 #{ $id }）：「{ $text }」
approval-when-in = { $minutes } 分鐘後
approval-outside = 以參數 { $arguments } 呼叫外部工具 { $tool }
approval-when-at = { $at }（{ $zone }）
approval-when-repeat = ，按 { $repeat } 重複
notice-approval-title = 有工具呼叫請求核准
notice-field-what = 內容
notice-field-outcome = 結果

# /ask (SPEC A5)
cmd-ask-name = 提問
cmd-ask-description = 問我任何問題，我在這裡回答
cmd-ask-text-name = 內容
cmd-ask-text-description = 你想問的內容
cmd-ask-private-name = 私密
cmd-ask-private-description = 只有你能看到回答
ask-refused = 我不能在這裡回答：此伺服器的管理員對我關閉了這個頻道或你的身分組。
ask-stopping = 我正在重新啟動。請一分鐘後再問。
ask-stopped = 已停止。
ask-no-answer = 我對此沒有答案。
ask-cut = 我只能停在這裡：Discord 只允許我在 15 分鐘內寫完對指令的回答。

# Message menus (SPEC A5)
menu-ask-name = 詢問這則訊息
menu-remember-name = 記住這個
menu-forget-name = 忘記這個
menu-ask-title = 詢問這則訊息
menu-ask-question = 你的問題
menu-remember-nothing = 這則訊息裡沒有我能記住的關於某人的內容。
menu-remembered = 我會記住的。
menu-remember-full = 我無法再記住關於此人的更多內容；請管理員用 /memory 清理一些。
menu-remember-consent = { $author }，{ $asker } 希望我記住你訊息中的這句話：「{ $fact }」。可以嗎？
menu-consent-allow = 允許
menu-consent-decline = 拒絕
menu-consent-not-yours = 只有發這則訊息的人才能回答。
menu-consent-expired = 此請求已過期；什麼也沒有記住。
menu-consent-allowed = 已允許：我會記住的。
menu-consent-declined = 已拒絕：什麼也沒有記住。
menu-forgot = 已忘記從那則訊息記住的 { $count } 條內容。
